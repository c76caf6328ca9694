package node

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestAbsenceDueOpenedByFirstPart: when S_0's signed part of a round opens
// the round here, the part counts as sent at the opening (docs/protocol.md
// §3), so S_1's part is due a hop after the opening. Before, the opening
// was stamped a moment after the part, which then counted as come before
// the opening, a round limit after it (partCame): S_1's part was due a
// round limit and a hop after the opening.
func TestAbsenceDueOpenedByFirstPart(t *testing.T) {
	const limit = 2 * time.Second
	desc := wire.Descriptor{Params: wire.Params{Rounds: 8, RoundLimitMs: uint32(limit / time.Millisecond)}}
	v := &view{Desc: &desc, ID: [32]byte{7}, Chain: []peer.ID{"a", "b", "c"}}
	e := &sepoch{v: v, final: v, pos: 2}
	s := &Server{changed: make(chan struct{})}
	if !s.noteRoot(e, &wire.Root{Epoch: v.ID, Round: 5, S: 1, Root: [32]byte{1}}) {
		t.Fatal("root refused")
	}
	open, ok := e.openAt[5]
	if !ok {
		t.Fatal("S_0's part did not open the round")
	}
	if at, ok := e.partCame(5, 0); !ok || !at.Equal(open) {
		t.Fatalf("S_0's part counts as come %v after the opening, want at it", at.Sub(open))
	}
	due := e.absenceDue(5)
	hop := lackWindow(e)
	if want := open.Add(hop); !due[1].Equal(want) {
		t.Fatalf("S_1's part due %v after the opening, want %v (a hop)", due[1].Sub(open), hop)
	}
	if want := open.Add(2 * hop); !due[2].Equal(want) {
		t.Fatalf("the publication due %v after the opening, want %v", due[2].Sub(open), 2*hop)
	}
}
