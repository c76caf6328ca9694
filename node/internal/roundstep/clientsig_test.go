package roundstep

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// TestCheckClientSigs: every server checks, for every slot of a batch's
// round, the client's signature over the onion's hash (§5.2); each kind
// of forgery a sender could pass on is refused.
func TestCheckClientSigs(t *testing.T) {
	t.Parallel()
	const n = 3
	var desc wire.Descriptor
	keys := make([]ed25519.PrivateKey, n)
	for i := range keys {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		keys[i] = priv
		var c wire.ClientEntry
		copy(c.RegKey[:], pub)
		desc.Clients = append(desc.Clients, c)
	}
	id := [32]byte{7}
	good := func() *wire.Batch {
		b := &wire.Batch{Epoch: id, Round: 9, S: 2}
		for i := 0; i < n; i++ {
			onion := []byte{byte(i), 1, 2, 3}
			b.ClientHashes = append(b.ClientHashes, mix.SubmissionDigest(onion))
			var sig [64]byte
			copy(sig[:], mix.SignSubmission(keys[i], mix.EpochID(id), 9, uint32(i), onion))
			b.ClientSigs = append(b.ClientSigs, sig)
		}
		return b
	}
	if err := CheckClientSigs(desc.Clients, good(), nil); err != nil {
		t.Fatalf("valid signatures refused: %v", err)
	}
	bad := map[string]func(b *wire.Batch){
		"hash changed":      func(b *wire.Batch) { b.ClientHashes[1][0] ^= 1 },
		"signature changed": func(b *wire.Batch) { b.ClientSigs[2][5] ^= 1 },
		"slots swapped": func(b *wire.Batch) {
			b.ClientSigs[0], b.ClientSigs[1] = b.ClientSigs[1], b.ClientSigs[0]
			b.ClientHashes[0], b.ClientHashes[1] = b.ClientHashes[1], b.ClientHashes[0]
		},
		"other round":     func(b *wire.Batch) { b.Round = 10 },
		"other epoch":     func(b *wire.Batch) { b.Epoch[0] ^= 1 },
		"one missing":     func(b *wire.Batch) { b.ClientSigs, b.ClientHashes = b.ClientSigs[:2], b.ClientHashes[:2] },
		"hashes missing":  func(b *wire.Batch) { b.ClientHashes = nil },
		"signature extra": func(b *wire.Batch) { b.ClientSigs = append(b.ClientSigs, b.ClientSigs[0]) },
	}
	for name, f := range bad {
		b := good()
		f(b)
		if err := CheckClientSigs(desc.Clients, b, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A dead slot holds the zero filler: no client signed it.
	b := good()
	b.ClientSigs[1] = [64]byte{}
	if err := CheckClientSigs(desc.Clients, b, []int{1}); err != nil {
		t.Errorf("a dead slot's signature checked: %v", err)
	}
	if err := CheckClientSigs(desc.Clients, b, []int{0}); err == nil {
		t.Error("a live slot without its signature accepted")
	}
}
