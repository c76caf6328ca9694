package node

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Test vectors of docs/proto-node.md (the Merkle roots were checked with an
// independent Python implementation): a change of any encoding fails here.
func TestProtoVectors(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		root := proto.MerkleRoot([][]byte{[]byte("a"), []byte("b"), []byte("c")})
		empty := proto.MerkleRoot(nil)
		one := proto.MerkleRoot([][]byte{[]byte("a")})
		var fr bytes.Buffer
		_ = wire.WriteFrame(&fr, wire.TypeSubmit, []byte{1, 2, 3})
		b := wire.Batch{Round: 5, S: 1, Root: root}
		got := map[string]string{
			"merkle(a,b,c)": hex.EncodeToString(root[:]),
			"merkle()":      hex.EncodeToString(empty[:]),
			"merkle(a)":     hex.EncodeToString(one[:]),
			"frame":         hex.EncodeToString(fr.Bytes()),
			"batch digest":  hex.EncodeToString(func() []byte { d := batchDigest(&b); return d[:] }()),
		}
		want := map[string]string{
			"merkle(a,b,c)": "1fb991a5032bfa296d7d5c926afed3c305eab9561a1663532d36485ac7bdecb5",
			"merkle()":      "ddd4c9862e9fabbd5ecae77ff80d516f5f7b86f31840d15f98ed1ab1fece3904",
			"merkle(a)":     "16a624f3dfc9337402ee1b2324fa93d7670871b72f1a091e700bf4058ec9fe08",
			"frame":         "2800000003010203",
			"batch digest":  "33188a89ae6b8a57c4de2c94ea7bc71a10213a368d6b0fdc6996a6522befa58e",
		}
		for k, v := range got {
			if want[k] != v {
				t.Errorf("%s = %s, want %s", k, v, want[k])
			}
		}
		// The root commits to order and to every entry.
		if proto.MerkleRoot([][]byte{[]byte("b"), []byte("a"), []byte("c")}) == root || proto.MerkleRoot([][]byte{[]byte("a"), []byte("b")}) == root {
			t.Fatal("merkle root ignores order or an entry")
		}
	})
}
