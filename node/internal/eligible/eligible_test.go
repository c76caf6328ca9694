package eligible

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/riffle-net/riffle/node/internal/roster"
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
	var w Table
	w.Init(nil, 2, nil, []SeenChain{{Number: 1, IDs: []peer.ID{"founder"}}})
	for _, id := range fakeIDs(MaxSince, 0) {
		w.Saw(id, 1)
	}
	fresh := fakeIDs(1, 3)[0]
	w.Saw(fresh, 10)
	if err := w.Check("self", fresh, 11, true); err == nil || !strings.Contains(err.Error(), "probation") {
		t.Fatalf("a new server within its probation: %v", err)
	}
	for n := uint64(12); n < 20; n++ {
		w.Saw(fresh, n)
		if err := w.Check("self", fresh, n, true); err != nil {
			t.Fatalf("a new server seen since epoch 10, probation 2, at epoch %d: %v", n, err)
		}
	}
	if n, _ := w.Sizes(); n > MaxSince {
		t.Fatalf("%d sightings > %d", n, MaxSince)
	}
}

// TestSightingsForgotten: sightings of peers not seen for roster.Forget are
// pruned (the table held every peer id that ever said hello), and
// withdrawals that ended go; a peer seen all along keeps its first number.
func TestSightingsForgotten(t *testing.T) {
	clk := newFakeClock()
	var w Table
	w.Init(nil, 2, nil, []SeenChain{{Number: 1, IDs: []peer.ID{"founder"}}})
	w.SetClock(clk.now)
	gone := fakeIDs(100, 0)
	for _, id := range gone {
		w.Saw(id, 1)
		w.Withdraw(id, time.Minute)
	}
	steady := fakeIDs(1, 4)[0]
	w.Saw(steady, 1)
	for el := time.Duration(0); el <= roster.Forget; el += roster.HelloEvery {
		clk.add(roster.HelloEvery)
		w.Saw(steady, 5)
	}
	w.Prune()
	if n, m := w.Sizes(); n != 1 || m != 0 {
		t.Fatalf("after %v: %d sightings, %d withdrawals kept, want 1 and 0", roster.Forget, n, m)
	}
	if n, _ := w.FirstSeen(steady); n != 1 {
		t.Fatalf("a peer seen all along has first number %d, want 1", n)
	}
	if err := w.Check("self", steady, 3, true); err != nil {
		t.Fatalf("a peer seen since epoch 1: %v", err)
	}
}

// TestProbation (§3 "Who may serve"): a peer id absent from the chains
// signed lately waits P_prob epochs from its first sighting; one in a
// chain of the last SeenWindow numbers waits none; a server with no chain
// on record puts nobody on probation; at number 0 only founders serve.
func TestProbation(t *testing.T) {
	ids := fakeIDs(4, 5)
	self, old, fresh, founder := ids[0], ids[1], ids[2], ids[3]
	var w Table
	w.Init(nil, 3, []peer.ID{self, founder}, []SeenChain{{Number: 10, IDs: []peer.ID{self, old}}})
	if err := w.Check(self, old, 10+SeenWindow-1, true); err != nil {
		t.Fatalf("a peer of a chain signed within the window: %v", err)
	}
	w.Saw(old, 10+SeenWindow)
	if err := w.Check(self, old, 10+SeenWindow, true); err == nil {
		t.Fatal("a peer of a chain signed SeenWindow numbers ago serves no probation")
	}
	w.Saw(fresh, 20)
	for n, ok := range map[uint64]bool{20: false, 22: false, 23: true} {
		if err := w.Check(self, fresh, n, true); (err == nil) != ok {
			t.Fatalf("a peer first seen at 20, P_prob 3, at %d: %v, want ok %v", n, err, ok)
		} else if err != nil && !strings.Contains(err.Error(), WithdrawMark) {
			t.Fatalf("a refusal that is not a withdrawal: %v", err)
		}
	}
	if err := w.Check(self, fresh, 0, true); err == nil {
		t.Fatal("a server not a founder serves number 1")
	}
	var boot Table
	boot.Init(nil, 3, nil, nil)
	if err := boot.Check(self, fresh, 5, true); err != nil {
		t.Fatalf("a server with no chain on record puts %s on probation: %v", fresh, err)
	}
}

// TestPinsAndWithdrawals: the operator's pins leave out the servers they
// do not allow (only where pins count), and a server that withdrew is
// left out of the chains proposed until its withdrawal ends.
func TestPinsAndWithdrawals(t *testing.T) {
	ids := fakeIDs(4, 6)
	self := ids[0]
	clk := newFakeClock()
	var w Table
	w.Init([]peer.ID{ids[1], ids[2]}, -1, nil, nil)
	w.SetClock(clk.now)
	if got := w.Pinned(self, ids); len(got) != 3 || slices.Contains(got, ids[3]) {
		t.Fatalf("pinned %v, want all but %s", got, ids[3])
	}
	if got := w.Filter(self, ids, 5, false); len(got) != 4 {
		t.Fatalf("by the group's rules alone: %v, want all", got)
	}
	w.Withdraw(ids[1], time.Minute)
	if got := w.Proposed(self, ids); slices.Contains(got, ids[1]) || len(got) != 3 {
		t.Fatalf("proposed %v with %s withdrawn", got, ids[1])
	}
	clk.add(2 * time.Minute)
	if got := w.Proposed(self, ids); len(got) != 4 {
		t.Fatalf("proposed %v after the withdrawal ended", got)
	}
}

// TestChainsKept: the chains signed are kept on disk, the last
// SeenWindow of them, and read back as they were.
func TestChainsKept(t *testing.T) {
	dir := t.TempDir()
	var ids []peer.ID
	for range 2 {
		_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPublicKey(pub)
		ids = append(ids, id)
	}
	var w Table
	w.Init(nil, 0, nil, nil)
	for n := uint64(1); n <= SeenWindow+3; n++ {
		if err := w.Record(dir, n, ids); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(w.SignedChains()); n != SeenWindow {
		t.Fatalf("%d chains held, want %d", n, SeenWindow)
	}
	got, err := LoadChains(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != SeenWindow || got[0].Number != 4 || !slices.Equal(got[len(got)-1].IDs, ids) {
		t.Fatalf("%d chains from %d, want %d from 4", len(got), got[0].Number, SeenWindow)
	}
}

// TestFounderServesNoProbation (§3 probation): a founder that number 1's
// chain left out (the first hellos came in another order) is a member of
// the chain of number 0, the founders: it serves no probation within the
// window, while a non-founder seen as early does, and so does a founder
// that no chain of the window held once the window has passed.
func TestFounderServesNoProbation(t *testing.T) {
	ids := fakeIDs(4, 5)
	a, b, late, outsider := ids[0], ids[1], ids[2], ids[3]
	var w Table
	w.Init(nil, 0, []peer.ID{a, b, late}, []SeenChain{{Number: 1, IDs: []peer.ID{a, b}}})
	w.Saw(late, 0)
	w.Saw(outsider, 0)
	for n := uint64(1); n < SeenWindow; n++ {
		if err := w.Check(a, late, n, true); err != nil {
			t.Fatalf("a founder left out of number 1, at number %d: %v", n, err)
		}
		if err := w.Check(a, outsider, n, true); n < DefaultProbation && (err == nil || !strings.Contains(err.Error(), "probation")) {
			t.Fatalf("a non-founder seen at number 0, at number %d: %v", n, err)
		}
	}
	w.Init(nil, 0, []peer.ID{a, b, late}, []SeenChain{{Number: SeenWindow + 1, IDs: []peer.ID{a, b}}})
	w.Saw(late, SeenWindow+1)
	if err := w.Check(a, late, SeenWindow+2, true); err == nil || !strings.Contains(err.Error(), "probation") {
		t.Fatalf("a founder in no chain of the window past it: %v", err)
	}
}
