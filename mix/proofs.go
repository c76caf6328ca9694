package mix

import (
	"errors"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/internal/group"
)

// This file holds the sigma protocols of §2–§4 and §8, all made
// non-interactive with Fiat–Shamir over group.Transcript. Every challenge
// hashes the full statement (through a statement digest that starts with the
// epoch id), the public key(s) and the commitment(s).

// proveSchnorr proves knowledge of x with X = x·G. stmt absorbs the statement
// that the proof is bound to; the challenge then hashes X and R.
func proveSchnorr(x *group.Scalar, X *group.Element, stmt func(*group.Transcript), tag string, rand io.Reader) ([]byte, error) {
	t := group.NewTranscript(tag)
	stmt(t)
	d := t.Element(X).Sum()
	k, err := proverNonce(rand, x, d[:])
	if err != nil {
		return nil, err
	}
	R := group.NewElement().ScalarBaseMult(k)
	c := schnorrChallenge(tag, stmt, X, R)
	s := group.NewScalar().Multiply(c, x)
	s.Add(s, k)
	k.Zero()
	out := make([]byte, 0, SchnorrProofSize)
	return append(append(out, R.Bytes()...), s.Bytes()...), nil
}

func schnorrChallenge(tag string, stmt func(*group.Transcript), X, R *group.Element) *group.Scalar {
	t := group.NewTranscript(tag)
	stmt(t)
	return t.Element(X).Element(R).Challenge()
}

// parseSchnorr decodes ENC(R) || SC(s) strictly.
func parseSchnorr(proof []byte) (*group.Element, *group.Scalar, error) {
	if len(proof) != SchnorrProofSize {
		return nil, nil, fmt.Errorf("schnorr proof: %w: %d bytes, want %d", group.ErrLength, len(proof), SchnorrProofSize)
	}
	R, err := group.DecodeElement(proof[:group.ElementSize])
	if err != nil {
		return nil, nil, fmt.Errorf("schnorr proof commitment: %w", err)
	}
	s, err := group.DecodeScalar(proof[group.ElementSize:])
	if err != nil {
		return nil, nil, fmt.Errorf("schnorr proof response: %w", err)
	}
	return R, s, nil
}

// verifySchnorr checks s·G == R + c·X. All inputs are public: variable time.
func verifySchnorr(X *group.Element, proof []byte, stmt func(*group.Transcript), tag string) error {
	R, s, err := parseSchnorr(proof)
	if err != nil {
		return err
	}
	c := schnorrChallenge(tag, stmt, X, R)
	c.Negate(c)
	if group.NewElement().VarTimeDoubleScalarBaseMult(c, X, s).Equal(R) != 1 {
		return ErrProof
	}
	return nil
}

// proveDLEQ is a Chaum–Pedersen proof that log_G H1 = log_G2 H2 = x, bound to
// the statement digest d. The proof is SC(c) || SC(s).
func proveDLEQ(d []byte, x *group.Scalar, H1, G2, H2 *group.Element, rand io.Reader) ([]byte, error) {
	k, err := proverNonce(rand, x, d)
	if err != nil {
		return nil, err
	}
	T1 := group.NewElement().ScalarBaseMult(k)
	T2 := group.NewElement().ScalarMult(k, G2)
	c := dleqChallenge(d, H1, G2, H2, T1, T2)
	s := group.NewScalar().Multiply(c, x)
	s.Add(s, k)
	k.Zero()
	out := make([]byte, 0, DLEQProofSize)
	return append(append(out, c.Bytes()...), s.Bytes()...), nil
}

func dleqChallenge(d []byte, H1, G2, H2, T1, T2 *group.Element) *group.Scalar {
	return group.NewTranscript(tagDLEQ).Fixed(d).
		Element(group.Base()).Element(H1).Element(G2).Element(H2).
		Element(T1).Element(T2).Challenge()
}

// verifyDLEQ recomputes T1 = s·G − c·H1 and T2 = s·G2 − c·H2 and checks
// that they hash to c.
func verifyDLEQ(d []byte, H1, G2, H2 *group.Element, proof []byte) error {
	if len(proof) != DLEQProofSize {
		return fmt.Errorf("dleq proof: %w: %d bytes, want %d", group.ErrLength, len(proof), DLEQProofSize)
	}
	c, err := group.DecodeScalar(proof[:group.ScalarSize])
	if err != nil {
		return fmt.Errorf("dleq proof challenge: %w", err)
	}
	s, err := group.DecodeScalar(proof[group.ScalarSize:])
	if err != nil {
		return fmt.Errorf("dleq proof response: %w", err)
	}
	nc := group.NewScalar().Negate(c)
	T1 := group.NewElement().VarTimeDoubleScalarBaseMult(nc, H1, s)
	T2 := group.NewElement().VarTimeMultiScalarMult([]*group.Scalar{s, nc}, []*group.Element{G2, H2})
	if dleqChallenge(d, H1, G2, H2, T1, T2).Equal(c) != 1 {
		return ErrProof
	}
	return nil
}

// reencryptionDigest is the statement of a blame step-1 proof (§8): at
// server s, the output at outPos re-encrypts the input at inPos on component
// j (0-based within the full vector, m being the pseudonym) under key.
func reencryptionDigest(epoch EpochID, s, inPos, outPos, component int, key *group.Element, in, out group.Ciphertext) []byte {
	d := group.NewTranscript(tagReencryption).Fixed(epoch[:]).
		U32(uint32(s)).U32(uint32(inPos)).U32(uint32(outPos)).U32(uint32(component)).
		Element(key).Ciphertext(in).Ciphertext(out).Sum()
	return d[:]
}

// ProveReencryption proves, from the kept re-randomisation scalar r, that
// out = in + r·(G, key): the Chaum–Pedersen proof of §2 "proof of one
// re-encryption", used by blame step 1 (§8). s is the server's chain
// position, inPos and outPos its input and output positions, component the
// ciphertext's index in the full vector (0..m, m the pseudonym).
func ProveReencryption(epoch EpochID, s, inPos, outPos, component int, key *group.Element, in, out group.Ciphertext, r *group.Scalar, rand io.Reader) ([]byte, error) {
	dA := group.NewElement().Subtract(out.A, in.A)
	dB := group.NewElement().Subtract(out.B, in.B)
	d := reencryptionDigest(epoch, s, inPos, outPos, component, key, in, out)
	p, err := proveDLEQ(d, r, dA, key, dB, rand)
	if err != nil {
		return nil, fmt.Errorf("re-encryption proof at server %d, input %d, output %d: %w", s, inPos, outPos, err)
	}
	return p, nil
}

// VerifyReencryption checks a proof made by ProveReencryption.
func VerifyReencryption(epoch EpochID, s, inPos, outPos, component int, key *group.Element, in, out group.Ciphertext, proof []byte) error {
	if key == nil || group.IsIdentity(key) {
		return fmt.Errorf("re-encryption proof: key: %w", group.ErrIdentity)
	}
	if in.A == nil || in.B == nil || out.A == nil || out.B == nil {
		return errors.New("re-encryption proof: missing ciphertext")
	}
	dA := group.NewElement().Subtract(out.A, in.A)
	dB := group.NewElement().Subtract(out.B, in.B)
	d := reencryptionDigest(epoch, s, inPos, outPos, component, key, in, out)
	if err := verifyDLEQ(d, dA, key, dB, proof); err != nil {
		return fmt.Errorf("re-encryption proof at server %d, input %d, output %d: %w", s, inPos, outPos, err)
	}
	return nil
}

// KeyKind names which of a round's two keys a share opens (§3).
type KeyKind uint8

// The two round keys: y_{s,r} (layer encryption) and y'_{s,r} (layer MAC).
const (
	EncKey KeyKind = 0
	MACKey KeyKind = 1
)

func (k KeyKind) String() string {
	switch k {
	case EncKey:
		return "enc"
	case MACKey:
		return "mac"
	}
	return fmt.Sprintf("KeyKind(%d)", uint8(k))
}

func roundKeyDigest(epoch EpochID, s int, round uint64, pos int, kind KeyKind, Y, U, Z *group.Element) []byte {
	d := group.NewTranscript(tagRoundKeyProof).Fixed(epoch[:]).
		U32(uint32(s)).U64(round).U32(uint32(pos)).U32(uint32(kind)).
		Element(Y).Element(U).Element(Z).Sum()
	return d[:]
}

// ProveRoundKey reveals Z = y·U for one round key (y_{s,r} or y'_{s,r}, by
// kind) at one input position, with the single DLEQ of §4.4 and §8:
// log_G Y = log_U Z. Blame reveals MAC shares first (§8 v2).
func ProveRoundKey(epoch EpochID, s int, round uint64, pos int, kind KeyKind, rk *RoundKeys, U *group.Element, rand io.Reader) (*group.Element, []byte, error) {
	y, yp, err := rk.round(round)
	if err != nil {
		return nil, nil, err
	}
	if U == nil || group.IsIdentity(U) {
		return nil, nil, fmt.Errorf("round key proof at position %d: share: %w", pos, group.ErrIdentity)
	}
	x, X := y, rk.Y[round]
	switch kind {
	case EncKey:
	case MACKey:
		x, X = yp, rk.Yp[round]
	default:
		return nil, nil, fmt.Errorf("round key proof: unknown key kind %d", kind)
	}
	Z := group.NewElement().ScalarMult(x, U)
	p, err := proveDLEQ(roundKeyDigest(epoch, s, round, pos, kind, X, U, Z), x, X, U, Z, rand)
	if err != nil {
		return nil, nil, fmt.Errorf("round key proof at position %d: %w", pos, err)
	}
	return Z, p, nil
}

// VerifyRoundKey checks that Z = y·U where Y = y·G is the published round key
// of the given kind for (s, round).
func VerifyRoundKey(epoch EpochID, s int, round uint64, pos int, kind KeyKind, Y, U, Z *group.Element, proof []byte) error {
	if kind != EncKey && kind != MACKey {
		return fmt.Errorf("round key proof: unknown key kind %d", kind)
	}
	for _, e := range []*group.Element{Y, U, Z} {
		if e == nil || group.IsIdentity(e) {
			return fmt.Errorf("round key proof at position %d: %w", pos, group.ErrIdentity)
		}
	}
	if err := verifyDLEQ(roundKeyDigest(epoch, s, round, pos, kind, Y, U, Z), Y, U, Z, proof); err != nil {
		return fmt.Errorf("round key proof at server %d, round %d, position %d: %w", s, round, pos, err)
	}
	return nil
}
