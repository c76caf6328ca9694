package node

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestRootEquivocation: the same root twice is fine; a second, different
// root signed for one (round, S) ends the epoch and is kept as evidence.
func TestRootEquivocation(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := beaconServer(t)
		// A descriptor, as every final view has (S_0 closes the ended epoch).
		v := &proto.View{Desc: &wire.Descriptor{}}
		e := &sepoch{v: v, final: v}
		r1 := wire.Root{Round: 4, S: 1, Root: [32]byte{1}}
		first, again := s.noteRoot(e, &r1), s.noteRoot(e, &r1)
		if !first || !again {
			t.Fatal("a repeated identical root was taken as equivocation")
		}
		if !s.noteRoot(e, &wire.Root{Round: 4, S: 2, Root: [32]byte{2}}) {
			t.Fatal("roots of different servers conflicted")
		}
		if s.noteRoot(e, &wire.Root{Round: 4, S: 1, Root: [32]byte{3}}) {
			t.Fatal("two roots signed for one (round, server) accepted")
		}
		if !e.ended || len(e.evidence[4]) != 2 {
			t.Fatalf("epoch ended %v, evidence %d entries", e.ended, len(e.evidence[4]))
		}
	})
}
