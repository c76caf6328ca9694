package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestCheckClientSigs: every server checks, for every slot of a batch's
// round, the client's signature over the onion's hash (§5.2); each kind
// of forgery a sender could pass on is refused.
func TestCheckClientSigs(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
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
		v := &proto.View{Desc: &desc, ID: [32]byte{7}}
		e := &sepoch{v: v, final: v}
		good := func() *wire.Batch {
			b := &wire.Batch{Epoch: v.ID, Round: 9, S: 2}
			for i := 0; i < n; i++ {
				onion := []byte{byte(i), 1, 2, 3}
				b.ClientHashes = append(b.ClientHashes, mix.SubmissionDigest(onion))
				var sig [64]byte
				copy(sig[:], mix.SignSubmission(keys[i], mix.EpochID(v.ID), 9, uint32(i), onion))
				b.ClientSigs = append(b.ClientSigs, sig)
			}
			return b
		}
		if err := checkClientSigs(e, good(), nil); err != nil {
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
			if err := checkClientSigs(e, b, nil); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})
}
