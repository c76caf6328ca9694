package mix

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// detRand is a deterministic reader for tests and test vectors: the
// AES-256-CTR keystream under SHA-256(seed), zero IV.
type detRand struct{ s cipher.Stream }

func newDetRand(seed string) io.Reader {
	k := sha256.Sum256([]byte(seed))
	b, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err)
	}
	return &detRand{s: cipher.NewCTR(b, make([]byte, aes.BlockSize))}
}

func (d *detRand) Read(p []byte) (int, error) {
	clear(p)
	d.s.XORKeyStream(p, p)
	return len(p), nil
}

// equalKeys compares two secret keys in constant time.
func equalKeys(a, b [LayerKeySize]byte) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }

// testEpoch is a fixed epoch id for tests.
func testEpoch(label string) EpochID { return EpochID(sha256.Sum256([]byte("epoch " + label))) }

// testServers makes m server secrets and their public keys.
func testServers(t testing.TB, m int, rand io.Reader) ([]*ServerSecret, []*group.Element) {
	t.Helper()
	sks := make([]*ServerSecret, m)
	X := make([]*group.Element, m)
	for s := range m {
		var err error
		if sks[s], err = NewServerSecret(rand); err != nil {
			t.Fatal(err)
		}
		X[s] = sks[s].Public()
	}
	return sks, X
}

func testRegKey(t testing.TB, rand io.Reader) ed25519.PrivateKey {
	t.Helper()
	var seed [ed25519.SeedSize]byte
	if _, err := io.ReadFull(rand, seed[:]); err != nil {
		t.Fatal(err)
	}
	return ed25519.NewKeyFromSeed(seed[:])
}

// testClients registers n clients and returns their secrets, keys and
// registrations.
func testClients(t testing.TB, epoch EpochID, X []*group.Element, n int, rand io.Reader) ([]*ClientSecret, []ed25519.PrivateKey, []*Registration) {
	t.Helper()
	cs := make([]*ClientSecret, n)
	keys := make([]ed25519.PrivateKey, n)
	regs := make([]*Registration, n)
	for i := range n {
		keys[i] = testRegKey(t, rand)
		var err error
		cs[i], regs[i], err = Register(epoch, keys[i].Public().(ed25519.PublicKey), X, rand)
		if err != nil {
			t.Fatal(err)
		}
	}
	return cs, keys, regs
}

// registerSharedR reproduces version 1's flaw for the tests that show it
// links: a registration whose m+1 components share one r, each with a valid
// proof of knowledge of it. Production code has no way to make one.
func registerSharedR(t testing.TB, epoch EpochID, regKey ed25519.PublicKey, X []*group.Element, rand io.Reader) (*ClientSecret, *Registration) {
	t.Helper()
	cs, reg, err := Register(epoch, regKey, X, rand)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := AggregateKeys(X, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := nonZeroScalar(rand)
	if err != nil {
		t.Fatal(err)
	}
	m := len(X)
	for j := 0; j <= m; j++ {
		M := cs.P
		if j < m {
			M = group.NewElement().ScalarBaseMult(cs.u[j])
		}
		ct := group.Ciphertext{A: group.NewElement().ScalarBaseMult(r), B: group.NewElement().ScalarMult(r, keys[j])}
		ct.B.Add(ct.B, M)
		proof, err := proveSchnorr(r, ct.A, ctPoKStatement(epoch, regKey, j, keys[j], ct), tagCtPoK, rand)
		if err != nil {
			t.Fatal(err)
		}
		reg.Ciphertexts[j] = ct
		copy(reg.Proofs[j][:], proof)
	}
	return cs, reg
}
