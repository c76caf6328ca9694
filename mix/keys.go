package mix

import (
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/internal/group"
)

// EpochID identifies an epoch: SHA-256 of its descriptor's number, nonce,
// group and parameters (§3). Every transcript, HKDF salt and associated
// data in this package starts from it, so nothing proven or sealed for one
// epoch is valid in another.
type EpochID [32]byte

// Sizes of the fixed encodings of this package.
const (
	// SchnorrProofSize is a Schnorr proof of knowledge: ENC(R) || SC(s).
	SchnorrProofSize = group.ElementSize + group.ScalarSize
	// DLEQProofSize is a Chaum–Pedersen proof: SC(c) || SC(s).
	DLEQProofSize = 2 * group.ScalarSize
	// SignatureSize is a pseudonym signature: ENC(R) || SC(s) (§2).
	SignatureSize = group.ElementSize + group.ScalarSize
	// MaxRounds caps R, the rounds of an epoch (§3).
	MaxRounds = 1024
	// MaxServers caps m, the chain length. The protocol sets no cap; 64 keeps
	// every size computation far from overflow and is far above any real chain.
	MaxServers = 64
	// MaxClients caps n, the clients of one epoch, for the same reason.
	MaxClients = 1 << 20
)

// ErrProof is wrapped by every error that reports a proof that does not
// verify.
var ErrProof = errors.New("proof does not verify")

// Domain tags (§2: every hash input starts with riffle/v2/<purpose>).
const (
	tagServerKeyPoK  = "riffle/v2/server-key-pok"
	tagKeyContext    = "riffle/v2/server-key-context"
	tagCtPoK         = "riffle/v2/registration-pok"
	tagNonce         = "riffle/v2/prover-nonce"
	tagDLEQ          = "riffle/v2/dleq"
	tagSetupDLEQ     = "riffle/v2/setup-dleq"
	tagSetupCoeff    = "riffle/v2/setup-dleq-coefficient"
	tagReencryption  = "riffle/v2/blame-reencryption"
	tagRoundKeyProof = "riffle/v2/blame-round-key"
	tagPseudonymSig  = "riffle/v3/pseudonym-sig"
	tagPayload       = "riffle/v3/payload"
	tagSubmission    = "riffle/v2/submission"
	tagLayerEnc      = "riffle/v2/layer-enc"
	tagLayerMAC      = "riffle/v2/layer-mac"
	tagRegHash       = "riffle/v2/registration-ciphertexts"
	tagLowOrderProbe = "riffle/v2/x25519-low-order-probe"
	shuffleStepName  = "shuffle"
)

// ServerSecret is a server's per-epoch ElGamal key x_s (§3, §4). It is
// erased as soon as setup has finished (forward secrecy, §3).
type ServerSecret struct {
	x      *group.Scalar
	X      *group.Element
	closed bool
}

// NewServerSecret draws a fresh ElGamal key.
func NewServerSecret(rand io.Reader) (*ServerSecret, error) {
	x, err := nonZeroScalar(rand)
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	return &ServerSecret{x: x, X: group.NewElement().ScalarBaseMult(x)}, nil
}

// Public returns X_s = x_s·G.
func (k *ServerSecret) Public() *group.Element { return group.NewElement().Set(k.X) }

// Close erases x_s. The public key stays readable; every use of the secret
// fails from now on (an erased x would otherwise act as x = 0).
func (k *ServerSecret) Close() {
	if k == nil {
		return
	}
	if k.x != nil {
		k.x.Zero()
	}
	k.closed = true
}

// secret returns x_s, or an error once Close has erased it.
func (k *ServerSecret) secret() (*group.Scalar, error) {
	if k == nil || k.x == nil || k.closed {
		return nil, errors.New("server key: secret closed")
	}
	return k.x, nil
}

// KeyContext is the context a server key's proof of knowledge is bound to
// (§3): the epoch number, the leader's nonce and the server's peer id.
func KeyContext(number uint64, nonce [32]byte, peerID []byte) []byte {
	d := group.NewTranscript(tagKeyContext).U64(number).Fixed(nonce[:]).Bytes(peerID).Sum()
	return d[:]
}

// ProveKey proves knowledge of x_s with a Schnorr proof whose challenge hashes
// ctx (use KeyContext), X_s and the commitment (§3).
func (k *ServerSecret) ProveKey(ctx []byte, rand io.Reader) ([]byte, error) {
	x, err := k.secret()
	if err != nil {
		return nil, err
	}
	return proveSchnorr(x, k.X, func(t *group.Transcript) { t.Bytes(ctx) }, tagServerKeyPoK, rand)
}

// VerifyKey checks a server key and its proof of knowledge for ctx. The key
// must not be the identity.
func VerifyKey(X *group.Element, ctx, proof []byte) error {
	if X == nil || group.IsIdentity(X) {
		return fmt.Errorf("server key: %w", group.ErrIdentity)
	}
	if err := verifySchnorr(X, proof, func(t *group.Transcript) { t.Bytes(ctx) }, tagServerKeyPoK); err != nil {
		return fmt.Errorf("server key proof of knowledge: %w", err)
	}
	return nil
}

// RoundKeys are a server's per-round scalars y_{s,r} (layer encryption) and
// y'_{s,r} (layer MAC) for r < R (§3). Both are kept to the epoch's end
// (blame may reveal one round's MAC key share) and then erased.
type RoundKeys struct {
	y, yp  []*group.Scalar
	Y, Yp  []*group.Element
	closed bool
}

// NewRoundKeys draws 2·R fresh scalars, 1 ≤ R ≤ MaxRounds.
func NewRoundKeys(R int, rand io.Reader) (*RoundKeys, error) {
	if R < 1 || R > MaxRounds {
		return nil, fmt.Errorf("round keys: %d rounds, want 1..%d", R, MaxRounds)
	}
	rk := &RoundKeys{
		y: make([]*group.Scalar, R), yp: make([]*group.Scalar, R),
		Y: make([]*group.Element, R), Yp: make([]*group.Element, R),
	}
	for r := range R {
		var err error
		if rk.y[r], err = nonZeroScalar(rand); err != nil {
			return nil, fmt.Errorf("round key %d: %w", r, err)
		}
		if rk.yp[r], err = nonZeroScalar(rand); err != nil {
			return nil, fmt.Errorf("round mac key %d: %w", r, err)
		}
		rk.Y[r] = group.NewElement().ScalarBaseMult(rk.y[r])
		rk.Yp[r] = group.NewElement().ScalarBaseMult(rk.yp[r])
	}
	return rk, nil
}

// Rounds returns R.
func (rk *RoundKeys) Rounds() int { return len(rk.Y) }

// Public returns copies of Y_{s,r} and Y'_{s,r} for r < R.
func (rk *RoundKeys) Public() (Y, Yp []*group.Element) {
	return copyElements(rk.Y), copyElements(rk.Yp)
}

// Close erases every round scalar.
func (rk *RoundKeys) Close() {
	if rk == nil {
		return
	}
	zeroScalars(rk.y)
	zeroScalars(rk.yp)
	rk.closed = true
}

func (rk *RoundKeys) round(r uint64) (y, yp *group.Scalar, err error) {
	if rk.closed {
		return nil, nil, errors.New("round keys: closed")
	}
	if r >= uint64(len(rk.y)) {
		return nil, nil, fmt.Errorf("round keys: round %d, epoch has %d", r, len(rk.y))
	}
	return rk.y[r], rk.yp[r], nil
}

// AggregateKeys returns the keys of the components server s receives (docs/protocol.md
// §4): A_{s,j} = X_s + … + X_j for j = s..m-1, then A_{s,m-1} again for the
// pseudonym component m. The result has m − s + 1 entries.
func AggregateKeys(serverKeys []*group.Element, s int) ([]*group.Element, error) {
	m := len(serverKeys)
	if m < 1 || m > MaxServers {
		return nil, fmt.Errorf("aggregate keys: %d servers, want 1..%d", m, MaxServers)
	}
	if s < 0 || s >= m {
		return nil, fmt.Errorf("aggregate keys: server %d of %d", s, m)
	}
	out := make([]*group.Element, 0, m-s+1)
	acc := group.NewElement()
	for j := s; j < m; j++ {
		if serverKeys[j] == nil || group.IsIdentity(serverKeys[j]) {
			return nil, fmt.Errorf("aggregate keys: server %d key: %w", j, group.ErrIdentity)
		}
		acc.Add(acc, serverKeys[j])
		// §4.1 v3: an aggregate key is checked like a single
		// one. Keys X and −X from two colluding servers would sum to
		// the identity, under which every ciphertext is plaintext.
		if group.IsIdentity(acc) {
			return nil, fmt.Errorf("aggregate keys: A_{%d,%d}: %w", s, j, group.ErrIdentity)
		}
		out = append(out, group.NewElement().Set(acc))
	}
	return append(out, group.NewElement().Set(acc)), nil
}

// nonZeroScalar draws a uniform non-zero scalar.
func nonZeroScalar(rand io.Reader) (*group.Scalar, error) {
	for {
		s, err := group.RandomScalar(rand)
		if err != nil {
			return nil, err
		}
		if s.Equal(group.NewScalar()) == 0 {
			return s, nil
		}
	}
}

// proverNonce derives a Schnorr nonce hedged against a weak random source:
// SHA-512(tag || secret || 32 fresh bytes || digest of the statement). With a
// good reader it is uniform; with a broken one it is still unique per
// (secret, statement).
func proverNonce(rand io.Reader, secret *group.Scalar, statement []byte) (*group.Scalar, error) {
	var fresh [32]byte
	if _, err := io.ReadFull(rand, fresh[:]); err != nil {
		return nil, fmt.Errorf("prover nonce: %w", err)
	}
	h := sha512.New()
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(tagNonce)))
	h.Write(l[:])
	h.Write([]byte(tagNonce))
	var sb [group.ScalarSize]byte
	copy(sb[:], secret.Bytes())
	h.Write(sb[:])
	h.Write(fresh[:])
	h.Write(statement)
	var d [64]byte
	h.Sum(d[:0])
	k := group.NewScalar()
	if _, err := k.SetUniformBytes(d[:]); err != nil {
		return nil, err
	}
	clear(sb[:])
	clear(d[:])
	clear(fresh[:])
	return k, nil
}

func copyElements(in []*group.Element) []*group.Element {
	out := make([]*group.Element, len(in))
	for i, e := range in {
		out[i] = group.NewElement().Set(e)
	}
	return out
}

func zeroScalars(s []*group.Scalar) {
	for _, x := range s {
		if x != nil {
			x.Zero()
		}
	}
}
