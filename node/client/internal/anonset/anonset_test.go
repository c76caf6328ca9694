package anonset

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestTrusted: only the clients registered through the primary and the
// required servers count; the others are shown, unmarked.
func TestTrusted(t *testing.T) {
	chain := []peer.ID{"a", "b", "c"}
	d := &wire.Descriptor{Group: []wire.GroupEntry{{Nick: []byte("A")}, {Nick: []byte("B")}, {Nick: []byte("C")}}}
	for _, p := range []uint16{0, 0, 1, 2, 2, 2, 7} {
		d.Clients = append(d.Clients, wire.ClientEntry{Primary: p})
	}
	if n, per := Trusted(chain, nil, d, 1); n != 1 || per != " A:2 *B:1 C:3" {
		t.Errorf("primary b alone: %d, %q", n, per)
	}
	if n, per := Trusted(chain, []peer.ID{"c", "z"}, d, 0); n != 5 || per != " *A:2 B:1 *C:3" {
		t.Errorf("primary a, c required: %d, %q", n, per)
	}
}
