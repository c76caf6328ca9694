package node

import (
	"encoding/hex"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestRouteVector pins the Route encoding written in docs/proto-node.md.
func TestRouteVector(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		got := hex.EncodeToString((&wire.Route{Epoch: [32]byte{1}, S: 1, Out: 2, In: 3, Proof: []byte{9, 9}}).Marshal())
		want := "01" + "00000000000000000000000000000000000000000000000000000000000000" + "0001" + "00000002" + "00000003" + "00000002" + "0909"
		if got != want {
			t.Fatalf("route encoding %s, want %s", got, want)
		}
	})
}

// TestBatchVector pins the Batch encoding written in docs/proto-node.md: a
// published batch of two entries, the first sent without its zero run.
func TestBatchVector(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		b := wire.Batch{Epoch: [32]byte{1}, Round: 2, S: 3,
			Entries:      [][]byte{{0xaa, 0, 0, 0, 0xbb}, {0xcc}},
			Zeros:        []wire.ZeroRun{{At: 1, N: 3}, {}},
			ClientSigs:   [][64]byte{{5}, {6}},
			ClientHashes: [][32]byte{{7}, {8}},
			Root:         [32]byte{9}, Sig: [64]byte{10}}
		z := func(n int) string { return hex.EncodeToString(make([]byte, n)) }
		want := "01" + z(31) + "00000002" + "0003" +
			"00000002" + "00000001" + "00000003" + "00000002" + "aabb" + "00000000" + "00000000" + "00000001" + "cc" +
			"00000002" + "05" + z(63) + "06" + z(63) +
			"00000002" + "07" + z(31) + "08" + z(31) +
			"09" + z(31) + "0a" + z(63)
		if got := hex.EncodeToString(b.Marshal()); got != want {
			t.Fatalf("batch encoding\n%s, want\n%s", got, want)
		}
	})
}
