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
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
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

// fakeLog is a certified log by hand: chains and candidates by number.
type fakeLog map[uint64]*wire.Cert

func (l fakeLog) of(n uint64) (*wire.Cert, bool) { c, ok := l[n]; return c, ok }

func (l fakeLog) add(n uint64, chain, cands []peer.ID) {
	c := &wire.Cert{Kind: wire.CertFinal, Number: n}
	for _, p := range chain {
		c.Chain = append(c.Chain, []byte(p))
	}
	for _, p := range cands {
		c.Cands = append(c.Cands, []byte(p))
	}
	l[n] = c
}

// TestFullSightingsOrderNewServer: once the first-sighting table is full,
// a genuinely new server still gets its entry, so a leader orders it
// before servers never sighted, and the table stays bounded.
func TestFullSightingsOrderNewServer(t *testing.T) {
	var w Table
	w.Init(nil, 2, nil, nil)
	for _, id := range fakeIDs(MaxSince, 0) {
		w.Saw(id, 1)
	}
	fresh, never := fakeIDs(1, 3)[0], peer.ID("a-never-sighted")
	w.Saw(fresh, 10)
	ids := []peer.ID{never, fresh}
	w.Order(ids)
	if ids[0] != fresh {
		t.Fatalf("order %v: the sighted server not first", ids)
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
	w.Init(nil, 2, nil, nil)
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
}

// TestProbation (§3 "Who may serve"): a peer id in a certified chain of
// the SeenWindow numbers before n serves at n; one in none serves P_prob
// numbers after the first certificate of the window that records it as a
// candidate, and not before; without founders number 1 puts nobody on
// probation; with them it takes founders only.
func TestProbation(t *testing.T) {
	ids := fakeIDs(4, 5)
	self, old, fresh, founder := ids[0], ids[1], ids[2], ids[3]
	log := fakeLog{}
	log.add(10, []peer.ID{self, old}, nil)
	log.add(20, []peer.ID{self}, []peer.ID{fresh})
	log.add(21, []peer.ID{self}, []peer.ID{fresh}) // a later record counts from the first
	var w Table
	w.Init(nil, 3, []peer.ID{self, founder}, nil)
	w.SetLog(log.of)
	if err := w.Check(self, old, 10+SeenWindow, true); err != nil {
		t.Fatalf("a peer of a chain certified within the window: %v", err)
	}
	if err := w.Check(self, old, 11+SeenWindow, true); err == nil {
		t.Fatal("a peer of a chain certified SeenWindow numbers before serves no probation")
	}
	for n, ok := range map[uint64]bool{20: false, 21: false, 22: false, 23: true, 20 + SeenWindow: true, 21 + SeenWindow: true, 22 + SeenWindow: false} {
		if err := w.Check(self, fresh, n, true); (err == nil) != ok {
			t.Fatalf("a candidate certified at 20, P_prob 3, at %d: %v, want ok %v", n, err, ok)
		} else if err != nil && !strings.Contains(err.Error(), WithdrawMark) {
			t.Fatalf("a refusal that is not a withdrawal: %v", err)
		}
	}
	if err := w.Check(self, fresh, 1, true); err == nil {
		t.Fatal("a server not a founder serves number 1")
	}
	// A server of a Prepare's previous certificate serves no probation
	// (that certificate is checked after), unless the pins leave it out.
	prev := [][]byte{[]byte(self), []byte(fresh)}
	if err := w.CheckPrev(self, fresh, 20, true, prev); err != nil {
		t.Fatalf("a server of the previous certificate: %v", err)
	}
	var pinned Table
	pinned.Init([]peer.ID{old}, 3, nil, nil)
	pinned.SetLog(log.of)
	if err := pinned.CheckPrev(self, fresh, 20, true, prev); err == nil || !strings.Contains(err.Error(), "allow") {
		t.Fatalf("a server of the previous certificate the pins leave out: %v", err)
	}
	var boot Table
	boot.Init(nil, 3, nil, nil)
	boot.SetLog(fakeLog{}.of)
	if err := boot.Check(self, fresh, 1, true); err != nil {
		t.Fatalf("number 1 without founders puts %s on probation: %v", fresh, err)
	}
}

// TestEligibilityFromCertifiedLog (§3 "Who may serve", issue 25): two
// servers that first sighted a newcomer at different numbers (one was
// away, or restarted, when it said hello) and hold the same certificates
// agree on its eligibility at every number. Before, probation counted from
// each server's own first sighting, and the one that sighted it 8 numbers
// later kept it out 8 numbers longer.
func TestEligibilityFromCertifiedLog(t *testing.T) {
	ids := fakeIDs(4, 7)
	a, b, c, x := ids[0], ids[1], ids[2], ids[3]
	log := fakeLog{}
	for n := uint64(1); n <= 60; n++ {
		var cands []peer.ID
		if n == 6 || n == 7 {
			cands = []peer.ID{x} // recorded by two leaders
		}
		chain := []peer.ID{a, b, c}
		if n > 20 {
			chain = append(chain, x)
		}
		log.add(n, chain, cands)
	}
	var early, late Table
	early.Init(nil, 0, nil, nil)
	late.Init(nil, 0, nil, nil)
	early.SetLog(log.of)
	late.SetLog(log.of)
	early.Saw(x, 5)
	late.Saw(x, 13) // away, or restarted, while x said hello
	for n := uint64(1); n <= 61; n++ {
		ea, la := early.Check(a, x, n, false), late.Check(b, x, n, false)
		if (ea == nil) != (la == nil) {
			t.Fatalf("at number %d the servers disagree on %s: %v against %v", n, x, ea, la)
		}
		if want := n <= 1 || n >= 6+DefaultProbation; (ea == nil) != want {
			t.Fatalf("at number %d: eligible %v, want %v (%v)", n, ea == nil, want, ea)
		}
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
// window, while a non-founder recorded as early does, and so does a
// founder that no chain of the window held once the window has passed.
func TestFounderServesNoProbation(t *testing.T) {
	ids := fakeIDs(4, 5)
	a, b, late, outsider := ids[0], ids[1], ids[2], ids[3]
	log := fakeLog{}
	log.add(1, []peer.ID{a, b}, []peer.ID{late, outsider})
	var w Table
	w.Init(nil, 0, []peer.ID{a, b, late}, nil)
	w.SetLog(log.of)
	for n := uint64(2); n <= SeenWindow; n++ {
		if err := w.Check(a, late, n, true); err != nil {
			t.Fatalf("a founder left out of number 1, at number %d: %v", n, err)
		}
		if err := w.Check(a, outsider, n, true); n < 1+DefaultProbation && (err == nil || !strings.Contains(err.Error(), "probation")) {
			t.Fatalf("a non-founder recorded at number 1, at number %d: %v", n, err)
		}
	}
	if err := w.Check(a, late, SeenWindow+2, true); err == nil || !strings.Contains(err.Error(), "probation") {
		t.Fatalf("a founder in no chain of the window past it: %v", err)
	}
}

// keptCerts is a certificate store of 40 numbers of m = 8, 8 candidates
// each, for the refusal cost.
func keptCerts(tb testing.TB) *certs.Certs {
	cs := &certs.Certs{}
	for n := uint64(1); n <= 40; n++ {
		c := wire.Cert{Kind: wire.CertFinal, Number: n}
		for i := range 8 {
			c.Chain = append(c.Chain, []byte(fmt.Sprintf("chain-server-%02d-%032d", i, 0)))
			c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i)})
			c.Cands = append(c.Cands, []byte(fmt.Sprintf("cand-%03d-%02d-%032d", n, i, 0)))
		}
		cs.Put(n, c.Marshal(), n)
	}
	return cs
}

// TestRefusalDecodesNothing: refusing a roster peer that no certificate
// of the window names (members.GroupPeer's last gate, before any work on
// an index, window or evidence request) reads the certificates' index and
// allocates nothing; decoding the 32 certificates of the window took 768
// allocations.
func TestRefusalDecodesNothing(t *testing.T) {
	w := &Table{}
	w.Init(nil, 0, nil, nil)
	cs := keptCerts(t)
	w.SetRoles(cs.Roles)
	outsider := peer.ID("a-peer-in-the-roster")
	if in, at := w.Recorded(outsider, 41); in || at != 0 {
		t.Fatalf("an outsider recorded: in chain %v, candidate at %d", in, at)
	}
	if in, at := w.Recorded(peer.ID(fmt.Sprintf("cand-%03d-%02d-%032d", 20, 3, 0)), 41); in || at != 20 {
		t.Fatalf("the candidate of 20: in chain %v, candidate at %d", in, at)
	}
	if a := testing.AllocsPerRun(100, func() { w.Recorded(outsider, 41) }); a != 0 {
		t.Errorf("refusing an outsider: %v allocations, want 0", a)
	}
}

// BenchmarkCheckNonMember is what one Check of a roster peer in no chain
// costs.
func BenchmarkCheckNonMember(b *testing.B) {
	w := &Table{}
	w.Init(nil, 0, nil, nil)
	w.SetRoles(keptCerts(b).Roles)
	self, outsider := peer.ID("self"), peer.ID("a-peer-in-the-roster")
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Check(self, outsider, 41, false)
	}
}
