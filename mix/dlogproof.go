package mix

import (
	"errors"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/internal/group"
)

// tagShareDlog binds the proof a client gives, after a duplicate U or P
// aborted setup, that it knows the discrete log of its value (§4.1 v3).
const tagShareDlog = "riffle/v3/duplicate-share-dlog"

// ShareDlogProofSize is the size of a share proof: ENC(R) 32 || SC(s) 32.
const ShareDlogProofSize = SchnorrProofSize

// shareDlogStatement binds a share proof to (epoch id, slot, component,
// the value): component j < m names U_{i,j}, component m the pseudonym P_i.
// A proof for one slot or epoch is worthless for another, so a copier
// cannot replay the honest client's proof as its own.
func shareDlogStatement(epoch EpochID, slot uint32, comp int) func(*group.Transcript) {
	return func(t *group.Transcript) {
		t.Fixed(epoch[:]).U32(slot).U32(uint32(comp))
	}
}

// Share returns the client's value of component comp: U_{i,comp} = u_{i,comp}·G
// for comp < m, P_i for comp = m.
func (cs *ClientSecret) Share(comp int) (*group.Element, error) {
	x, err := cs.shareScalar(comp)
	if err != nil {
		return nil, err
	}
	return group.NewElement().ScalarBaseMult(x), nil
}

func (cs *ClientSecret) shareScalar(comp int) (*group.Scalar, error) {
	if cs == nil || cs.closed {
		return nil, errors.New("client share: secret closed")
	}
	switch {
	case comp >= 0 && comp < len(cs.u):
		return cs.u[comp], nil
	case comp == len(cs.u):
		return cs.q, nil
	}
	return nil, fmt.Errorf("client share: component %d of %d", comp, len(cs.u)+1)
}

// ProveShare proves knowledge of the discrete log of the client's value of
// component comp (u_{i,comp}, or q_i for comp = m), bound to the epoch and
// the client's slot (§4.1 v3). The setup it answers for is void, so
// the value it reveals links nothing that is used afterwards.
func (cs *ClientSecret) ProveShare(epoch EpochID, slot uint32, comp int, rand io.Reader) ([]byte, error) {
	x, err := cs.shareScalar(comp)
	if err != nil {
		return nil, err
	}
	X := group.NewElement().ScalarBaseMult(x)
	return proveSchnorr(x, X, shareDlogStatement(epoch, slot, comp), tagShareDlog, rand)
}

// VerifyShare checks a share proof for value V at (epoch, slot, comp). V
// must not be the identity; the proof is ENC(R) || SC(s), strictly
// canonical.
func VerifyShare(epoch EpochID, slot uint32, comp int, V *group.Element, proof []byte) error {
	if V == nil || group.IsIdentity(V) {
		return fmt.Errorf("share proof: %w", group.ErrIdentity)
	}
	if comp < 0 || comp > MaxServers {
		return fmt.Errorf("share proof: component %d out of range", comp)
	}
	if err := verifySchnorr(V, proof, shareDlogStatement(epoch, slot, comp), tagShareDlog); err != nil {
		return fmt.Errorf("share proof of slot %d component %d: %w", slot, comp, err)
	}
	return nil
}

// SealComponent encrypts the value M as component j of a registration
// (§4.1): (r·G, M + r·K) under the component's key K (A_{0,j}, or
// A_{0,m-1} for j = m) with fresh r, and the proof of knowledge of r bound
// to the epoch and regKey. Register builds every component this way; a
// test uses it to model a client that registers a copy of a value it did
// not draw (one a malicious S_0 decrypted), which passes every
// registration check and is caught only by the proof of its discrete log.
func SealComponent(epoch EpochID, regKey []byte, serverKeys []*group.Element, j int, M *group.Element, rand io.Reader) (group.Ciphertext, [SchnorrProofSize]byte, error) {
	var proof [SchnorrProofSize]byte
	keys, err := AggregateKeys(serverKeys, 0)
	if err != nil {
		return group.Ciphertext{}, proof, err
	}
	if j < 0 || j >= len(keys) {
		return group.Ciphertext{}, proof, fmt.Errorf("seal component %d of %d", j, len(keys))
	}
	r, err := nonZeroScalar(rand)
	if err != nil {
		return group.Ciphertext{}, proof, err
	}
	defer r.Zero()
	ct := group.Ciphertext{A: group.NewElement().ScalarBaseMult(r), B: group.NewElement().ScalarMult(r, keys[j])}
	ct.B.Add(ct.B, M)
	p, err := proveSchnorr(r, ct.A, ctPoKStatement(epoch, regKey, j, keys[j], ct), tagCtPoK, rand)
	if err != nil {
		return group.Ciphertext{}, proof, err
	}
	copy(proof[:], p)
	return ct, proof, nil
}
