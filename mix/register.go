package mix

import (
	"crypto/ecdh"
	"crypto/ed25519"
	crand "crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/riffle-net/riffle/internal/group"
)

// PIRKeySize is the client's ephemeral X25519 public key (§4.1, §6.2).
const PIRKeySize = 32

// registrationEntrySize is one component: ciphertext || Schnorr proof.
const registrationEntrySize = group.CiphertextSize + SchnorrProofSize

// RegistrationSize is the encoded size of a registration for m servers:
// (m+1) × (ciphertext 64 || proof 64) || X25519 key 32.
func RegistrationSize(m int) int { return (m+1)*registrationEntrySize + PIRKeySize }

// ClientSecret is a client's per-epoch secrets (§4.1): the DH scalars
// u_{i,j}, one per server, the pseudonym key q_i and the seed of its X25519
// key. Close erases them at the epoch's end (§3).
type ClientSecret struct {
	u       []*group.Scalar
	q       *group.Scalar
	P       *group.Element            // the pseudonym P_i = q_i·G
	uEnc    [][group.ElementSize]byte // ENC(u_j·G), only with the memo on (dhKey)
	pirSeed [32]byte
	closed  bool
}

// Pseudonym returns P_i.
func (cs *ClientSecret) Pseudonym() *group.Element { return group.NewElement().Set(cs.P) }

// PIRKey returns the client's ephemeral X25519 private key (§6.2).
func (cs *ClientSecret) PIRKey() (*ecdh.PrivateKey, error) {
	if cs.closed {
		return nil, errors.New("client pir key: secret closed")
	}
	return ecdh.X25519().NewPrivateKey(cs.pirSeed[:])
}

// Close erases u, q and the X25519 seed.
func (cs *ClientSecret) Close() {
	if cs == nil {
		return
	}
	zeroScalars(cs.u)
	if cs.q != nil {
		cs.q.Zero()
	}
	clear(cs.pirSeed[:])
	cs.closed = true
}

// Registration is what a client sends to its primary (§4.1): m+1
// ElGamal ciphertexts, component j < m encrypting U_{i,j} under A_{0,j} and
// component m encrypting the pseudonym P_i under A_{0,m-1}, each with its own
// randomness and a Schnorr proof of knowledge of it, and an X25519 key.
type Registration struct {
	Ciphertexts []group.Ciphertext
	Proofs      [][SchnorrProofSize]byte
	PIRKey      [PIRKeySize]byte

	// ctEnc keeps the encodings of Ciphertexts that ParseRegistration
	// decoded, for setup's first step (encoded.go).
	ctEnc *encoded
}

// ctPoKStatement binds a component's proof to (epoch id, registration key,
// j, the component's key, the whole ciphertext) (§4.1).
func ctPoKStatement(epoch EpochID, regKey ed25519.PublicKey, j int, key *group.Element, ct group.Ciphertext) func(*group.Transcript) {
	return func(t *group.Transcript) {
		t.Fixed(epoch[:]).Bytes(regKey).U32(uint32(j)).Element(key).Ciphertext(ct)
	}
}

// Register makes a client's registration for an epoch (§4.1): every
// component with its own fresh randomness (v2).
func Register(epoch EpochID, regKey ed25519.PublicKey, serverKeys []*group.Element, rand io.Reader) (*ClientSecret, *Registration, error) {
	if len(regKey) != ed25519.PublicKeySize {
		return nil, nil, fmt.Errorf("register: registration key of %d bytes, want %d", len(regKey), ed25519.PublicKeySize)
	}
	keys, err := AggregateKeys(serverKeys, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("register: %w", err)
	}
	m := len(serverKeys)
	cs := &ClientSecret{u: make([]*group.Scalar, m)}
	reg := &Registration{Ciphertexts: make([]group.Ciphertext, m+1), Proofs: make([][SchnorrProofSize]byte, m+1)}
	for j := 0; j <= m; j++ {
		var x *group.Scalar
		if x, err = nonZeroScalar(rand); err != nil {
			cs.Close()
			return nil, nil, fmt.Errorf("register component %d: %w", j, err)
		}
		M := group.NewElement().ScalarBaseMult(x)
		if j < m {
			cs.u[j] = x
			if dhMemoOn() {
				cs.uEnc = append(cs.uEnc, [group.ElementSize]byte(M.Bytes()))
			}
		} else {
			cs.q, cs.P = x, M
		}
		r, err := nonZeroScalar(rand)
		if err != nil {
			cs.Close()
			return nil, nil, fmt.Errorf("register component %d: %w", j, err)
		}
		ct := group.Ciphertext{A: group.NewElement().ScalarBaseMult(r), B: group.NewElement().ScalarMult(r, keys[j])}
		ct.B.Add(ct.B, M)
		proof, err := proveSchnorr(r, ct.A, ctPoKStatement(epoch, regKey, j, keys[j], ct), tagCtPoK, rand)
		if err != nil {
			cs.Close()
			return nil, nil, fmt.Errorf("register component %d: %w", j, err)
		}
		r.Zero()
		reg.Ciphertexts[j] = ct
		copy(reg.Proofs[j][:], proof)
	}
	if _, err := io.ReadFull(rand, cs.pirSeed[:]); err != nil {
		cs.Close()
		return nil, nil, fmt.Errorf("register pir key: %w", err)
	}
	pk, err := cs.PIRKey()
	if err != nil {
		cs.Close()
		return nil, nil, fmt.Errorf("register pir key: %w", err)
	}
	copy(reg.PIRKey[:], pk.PublicKey().Bytes())
	return cs, reg, nil
}

// VerifyRegistration checks a registration's shape and every proof of
// knowledge against the epoch, the client's registration key and the
// servers' keys (§4.1). Every server runs it on every registration;
// VerifyRegistrations does many at once.
func VerifyRegistration(epoch EpochID, regKey ed25519.PublicKey, serverKeys []*group.Element, reg *Registration) error {
	keys, err := AggregateKeys(serverKeys, 0)
	if err != nil {
		return fmt.Errorf("registration: %w", err)
	}
	if err := reg.checkShape(len(serverKeys)); err != nil {
		return err
	}
	for j, ct := range reg.Ciphertexts {
		if err := verifySchnorr(ct.A, reg.Proofs[j][:], ctPoKStatement(epoch, regKey, j, keys[j], ct), tagCtPoK); err != nil {
			return fmt.Errorf("registration component %d: %w", j, err)
		}
	}
	return nil
}

// checkShape checks m+1 components, none the identity, no two sharing
// their randomness.
func (reg *Registration) checkShape(m int) error {
	if reg == nil || len(reg.Ciphertexts) != m+1 || len(reg.Proofs) != m+1 {
		return fmt.Errorf("registration: wrong number of components, want %d", m+1)
	}
	for j, ct := range reg.Ciphertexts {
		if ct.A == nil || ct.B == nil || group.IsIdentity(ct.A) || group.IsIdentity(ct.B) {
			return fmt.Errorf("registration component %d: %w", j, group.ErrIdentity)
		}
		for k := range j {
			if reg.Ciphertexts[k].A.Equal(ct.A) == 1 {
				return fmt.Errorf("registration components %d and %d share their randomness", k, j)
			}
		}
	}
	return nil
}

// VerifyRegistrations is VerifyRegistration for a whole list (input slot i
// has registration key regKeys[i]): the shapes one by one, then all proofs
// of knowledge with one multi-scalar multiplication under fresh 128-bit
// weights from rand (nil: crypto/rand), falling back to one by one only to
// name the culprits. It returns the failing slots in order; err reports
// unusable server keys or list lengths.
func VerifyRegistrations(epoch EpochID, regKeys []ed25519.PublicKey, serverKeys []*group.Element, regs []*Registration, rand io.Reader) (bad []int, err error) {
	if rand == nil {
		rand = crand.Reader
	}
	keys, err := AggregateKeys(serverKeys, 0)
	if err != nil {
		return nil, fmt.Errorf("registrations: %w", err)
	}
	if len(regKeys) != len(regs) {
		return nil, fmt.Errorf("registrations: %d keys for %d registrations", len(regKeys), len(regs))
	}
	m, n := len(serverKeys), len(regs)
	// Per proof (i, j): R, s and the challenge c, computed on all cores.
	type item struct {
		R    *group.Element
		s, c *group.Scalar
	}
	items := make([]item, n*(m+1))
	ok := make([]bool, n)
	// A parsed registration's challenges hash the bytes it was parsed
	// from (ciphertexts, and R from the proof) and the keys' encodings,
	// made once: the transcript is the same, without 5(m+1) encodings
	// per registration (encoded.go).
	keyEnc := make([][]byte, len(keys))
	for j, k := range keys {
		keyEnc[j] = k.Bytes()
	}
	parallel(n, func(i int) {
		reg := regs[i]
		if reg.checkShape(m) != nil {
			return
		}
		var enc []byte
		if reg.ctEnc.of(flatVectors([][]group.Ciphertext{reg.Ciphertexts})) {
			enc = reg.ctEnc.enc
		}
		for j, ct := range reg.Ciphertexts {
			R, s, err := parseSchnorr(reg.Proofs[j][:])
			if err != nil {
				return
			}
			var c *group.Scalar
			if enc != nil {
				ctEnc := enc[j*group.CiphertextSize : (j+1)*group.CiphertextSize]
				c = group.NewTranscript(tagCtPoK).Fixed(epoch[:]).Bytes(regKeys[i]).U32(uint32(j)).Fixed(keyEnc[j]).
					Fixed(ctEnc).Fixed(ctEnc[:group.ElementSize]).Fixed(reg.Proofs[j][:group.ElementSize]).Challenge()
			} else {
				c = schnorrChallenge(tagCtPoK, ctPoKStatement(epoch, regKeys[i], j, keys[j], ct), ct.A, R)
			}
			items[i*(m+1)+j] = item{R: R, s: s, c: c}
		}
		ok[i] = true
	})
	// Σ w·(s·G − R − c·A) = O over every proof of every well-formed slot.
	scal := make([]*group.Scalar, 0, 2*len(items)+1)
	pts := make([]*group.Element, 0, 2*len(items)+1)
	gsum := group.NewScalar()
	for i := range n {
		if !ok[i] {
			continue
		}
		for j, ct := range regs[i].Ciphertexts {
			it := items[i*(m+1)+j]
			w, err := group.RandomWeight(rand)
			if err != nil {
				return nil, fmt.Errorf("registrations: %w", err)
			}
			gsum.Add(gsum, group.NewScalar().Multiply(w, it.s))
			scal = append(scal, group.NewScalar().Negate(w), group.NewScalar().Negate(group.NewScalar().Multiply(w, it.c)))
			pts = append(pts, it.R, ct.A)
		}
	}
	scal = append(scal, gsum)
	pts = append(pts, group.Base())
	batchOK := group.IsIdentity(group.VarTimeMSM(scal, pts))
	for i := range n {
		if !ok[i] {
			bad = append(bad, i)
			continue
		}
		if batchOK {
			continue
		}
		for j, ct := range regs[i].Ciphertexts {
			it := items[i*(m+1)+j]
			nc := group.NewScalar().Negate(it.c)
			if group.NewElement().VarTimeDoubleScalarBaseMult(nc, ct.A, it.s).Equal(it.R) != 1 {
				bad = append(bad, i)
				break
			}
		}
	}
	return bad, nil
}

// CheckDistinct rejects two registrations that share a ciphertext component
// (§4.1: duplicates are rejected), naming both input slots.
func CheckDistinct(regs []*Registration) error {
	seen := make(map[[group.ElementSize]byte]int)
	for i, reg := range regs {
		for j, ct := range reg.Ciphertexts {
			var k [group.ElementSize]byte
			copy(k[:], ct.A.Bytes())
			if prev, ok := seen[k]; ok && prev != i {
				return fmt.Errorf("registrations %d and %d share a ciphertext (component %d)", prev, i, j)
			}
			seen[k] = i
		}
	}
	return nil
}

// MarshalBinary encodes the registration: for j = 0..m, ENC(A_j) || ENC(B_j)
// || ENC(R_j) || SC(s_j), then the X25519 key.
func (reg *Registration) MarshalBinary() ([]byte, error) {
	if len(reg.Ciphertexts) != len(reg.Proofs) || len(reg.Ciphertexts) < 2 {
		return nil, fmt.Errorf("registration: %d ciphertexts and %d proofs", len(reg.Ciphertexts), len(reg.Proofs))
	}
	out := make([]byte, 0, RegistrationSize(len(reg.Ciphertexts)-1))
	for j, ct := range reg.Ciphertexts {
		out = ct.Append(out)
		out = append(out, reg.Proofs[j][:]...)
	}
	return append(out, reg.PIRKey[:]...), nil
}

// ParseRegistration decodes a registration for m servers. Ciphertext
// components must be canonical and not the identity (§2), and proofs
// canonical; the proofs themselves are checked by VerifyRegistration.
func ParseRegistration(b []byte, m int) (*Registration, error) {
	if m < 1 || m > MaxServers {
		return nil, fmt.Errorf("registration: %d servers, want 1..%d", m, MaxServers)
	}
	if len(b) != RegistrationSize(m) {
		return nil, fmt.Errorf("registration: %w: %d bytes, want %d for %d servers", group.ErrLength, len(b), RegistrationSize(m), m)
	}
	reg := &Registration{Ciphertexts: make([]group.Ciphertext, m+1), Proofs: make([][SchnorrProofSize]byte, m+1)}
	for j := 0; j <= m; j++ {
		e := b[j*registrationEntrySize : (j+1)*registrationEntrySize]
		ct, err := group.DecodeCiphertext(e[:group.CiphertextSize], true)
		if err != nil {
			return nil, fmt.Errorf("registration component %d: %w", j, err)
		}
		if _, _, err := parseSchnorr(e[group.CiphertextSize:]); err != nil {
			return nil, fmt.Errorf("registration component %d: %w", j, err)
		}
		reg.Ciphertexts[j] = ct
		copy(reg.Proofs[j][:], e[group.CiphertextSize:])
	}
	copy(reg.PIRKey[:], b[(m+1)*registrationEntrySize:])
	reg.ctEnc = &encoded{elems: flatVectors([][]group.Ciphertext{reg.Ciphertexts}), enc: make([]byte, 0, (m+1)*group.CiphertextSize)}
	for j := 0; j <= m; j++ {
		reg.ctEnc.enc = append(reg.ctEnc.enc, b[j*registrationEntrySize:j*registrationEntrySize+group.CiphertextSize]...)
	}
	if err := checkPIRKey(reg.PIRKey[:]); err != nil {
		return nil, fmt.Errorf("registration: %w", err)
	}
	return reg, nil
}

// lowOrderProbe is a fixed, public X25519 scalar. X25519 clamps every scalar
// to a multiple of 8, so its product with a point of order 1, 2, 4 or 8 (on
// the curve or its twist) is zero, which crypto/ecdh reports as an error.
var lowOrderProbe = sync.OnceValue(func() *ecdh.PrivateKey {
	seed := sha256.Sum256([]byte(tagLowOrderProbe))
	k, err := ecdh.X25519().NewPrivateKey(seed[:])
	if err != nil {
		panic(err) // unreachable: any 32 bytes are an X25519 private key
	}
	return k
})

// checkPIRKey rejects a client X25519 key of low order: the X25519 analogue
// of the identity (§2), whose shared secret with every server is zero,
// so that every server's §6.2 seed derivation would fail at round time.
func checkPIRKey(b []byte) error {
	pk, err := ecdh.X25519().NewPublicKey(b)
	if err != nil {
		return fmt.Errorf("x25519 key: %w", err)
	}
	if _, err := lowOrderProbe().ECDH(pk); err != nil {
		return fmt.Errorf("x25519 key of low order: %w", group.ErrIdentity)
	}
	return nil
}

// CiphertextHash is the hash of a registration's ciphertexts that the final
// descriptor lists per input slot (§3): SHA-256 over the tag
// "riffle/v2/registration-ciphertexts" (u32-length-prefixed), u32 (m+1) and
// the ciphertexts in order.
func (reg *Registration) CiphertextHash() [32]byte {
	h := sha256.New()
	var l [4]byte
	putU32(l[:], uint32(len(tagRegHash)))
	h.Write(l[:])
	h.Write([]byte(tagRegHash))
	putU32(l[:], uint32(len(reg.Ciphertexts)))
	h.Write(l[:])
	if flat := flatVectors([][]group.Ciphertext{reg.Ciphertexts}); reg.ctEnc.of(flat) {
		h.Write(reg.ctEnc.enc)
	} else {
		for _, ct := range reg.Ciphertexts {
			h.Write(ct.Bytes())
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// InitialVectors lists the clients' ciphertext vectors in slot order: S_0's
// input (§4.2). Each vector has m+1 components.
func InitialVectors(regs []*Registration) [][]group.Ciphertext {
	out := make([][]group.Ciphertext, len(regs))
	for i, reg := range regs {
		v := make([]group.Ciphertext, len(reg.Ciphertexts))
		for j, ct := range reg.Ciphertexts {
			v[j] = group.Ciphertext{A: group.NewElement().Set(ct.A), B: group.NewElement().Set(ct.B)}
		}
		out[i] = v
	}
	// Setup's first step hashes these vectors: hand on the encodings the
	// registrations were decoded from, if every one still has them.
	var enc []byte
	for _, reg := range regs {
		if !reg.ctEnc.of(flatVectors([][]group.Ciphertext{reg.Ciphertexts})) {
			return out
		}
		enc = append(enc, reg.ctEnc.enc...)
	}
	if len(out) > 0 {
		rememberVectors(out, enc)
	}
	return out
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
