package node

import (
	"encoding/hex"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestRouteVector pins the Route encoding written in docs/proto-node.md.
func TestRouteVector(t *testing.T) {
	got := hex.EncodeToString((&wire.Route{Epoch: [32]byte{1}, S: 1, Out: 2, In: 3, Proof: []byte{9, 9}}).Marshal())
	want := "01" + "00000000000000000000000000000000000000000000000000000000000000" + "0001" + "00000002" + "00000003" + "00000002" + "0909"
	if got != want {
		t.Fatalf("route encoding %s, want %s", got, want)
	}
}
