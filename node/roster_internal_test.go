package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// fakeClock is a clock the tests move by hand.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock      { return &fakeClock{t: time.Unix(1_800_000_000, 0)} }
func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.t = c.t.Add(d)
}

// fakeIDs are n distinct peer ids of set `set` (the tables here key by id
// and never parse it).
func fakeIDs(n, set int) []peer.ID {
	out := make([]peer.ID, n)
	for i := range out {
		out[i] = peer.ID(fmt.Sprintf("fake-%d-%d", set, i))
	}
	return out
}

// TestFullSightingsAdmitNewServer (§3 probation): once the first-sighting
// table is full, a genuinely new server still has its probation counted
// and serves after P_prob epochs (it stayed on probation at every number),
// while a peer of a full table seen at every hello keeps its first number.
func TestFullSightingsAdmitNewServer(t *testing.T) {
	var w whoState
	w.init(&ServerConfig{Probation: 2}, []seenChain{{number: 1, ids: []peer.ID{"founder"}}})
	for _, id := range fakeIDs(maxSince, 0) {
		w.saw(id, 1)
	}
	fresh := fakeIDs(1, 3)[0]
	w.saw(fresh, 10)
	if err := w.check("self", fresh, 11, true); err == nil || !strings.Contains(err.Error(), "probation") {
		t.Fatalf("a new server within its probation: %v", err)
	}
	for n := uint64(12); n < 20; n++ {
		w.saw(fresh, n)
		if err := w.check("self", fresh, n, true); err != nil {
			t.Fatalf("a new server seen since epoch 10, probation 2, at epoch %d: %v", n, err)
		}
	}
	if len(w.since) > maxSince {
		t.Fatalf("%d sightings > %d", len(w.since), maxSince)
	}
}

// TestSightingsForgotten: sightings of peers not seen for rosterForget are
// pruned (the table held every peer id that ever said hello), and
// withdrawals that ended go; a peer seen all along keeps its first number.
func TestSightingsForgotten(t *testing.T) {
	clk := newFakeClock()
	var w whoState
	w.init(&ServerConfig{Probation: 2}, []seenChain{{number: 1, ids: []peer.ID{"founder"}}})
	w.clock = clk.now
	gone := fakeIDs(100, 0)
	for _, id := range gone {
		w.saw(id, 1)
		w.withdraw(id, time.Minute)
	}
	steady := fakeIDs(1, 4)[0]
	w.saw(steady, 1)
	for el := time.Duration(0); el <= rosterForget; el += helloEvery {
		clk.add(helloEvery)
		w.saw(steady, 5)
	}
	w.prune()
	if len(w.since) != 1 || len(w.withdrawn) != 0 {
		t.Fatalf("after %v: %d sightings, %d withdrawals kept, want 1 and 0", rosterForget, len(w.since), len(w.withdrawn))
	}
	if w.since[steady].number != 1 {
		t.Fatalf("a peer seen all along has first number %d, want 1", w.since[steady].number)
	}
	if err := w.check("self", steady, 3, true); err != nil {
		t.Fatalf("a peer seen since epoch 1: %v", err)
	}
}
