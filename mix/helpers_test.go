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
