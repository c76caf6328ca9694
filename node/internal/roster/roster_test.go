package roster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
)

// clock is a clock the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }

// ids are n distinct peer ids of set `set` (the table keys by id and
// never parses it).
func ids(n, set int) []peer.ID {
	out := make([]peer.ID, n)
	for i := range out {
		out[i] = peer.ID(fmt.Sprintf("fake-%d-%d", set, i))
	}
	return out
}

// TestRosterForgets (§3; proto-node.md "Discovery and roster"): a member
// silent for Forget is forgotten (no more hellos go to it), one that
// keeps answering never is; a full roster makes room by evicting the
// stalest member that is not live, and never a live one.
func TestRosterForgets(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	r := &Table{Clock: clk.now}
	two := ids(2, 0)
	live, vanished := two[0], two[1]
	r.Saw(live, "live", nil)
	r.Saw(vanished, "vanished", nil)
	forgotten := 0
	for el := time.Duration(0); el < 3*Forget; el += HelloEvery {
		clk.add(HelloEvery)
		r.Saw(live, "live", nil)
		for _, id := range r.Forget() {
			if id == live {
				t.Fatalf("a member that answered every %v was forgotten after %v", HelloEvery, el)
			}
			forgotten++
		}
		if _, ok := r.m[vanished]; ok && el > Forget {
			t.Fatalf("a member silent for %v is still greeted", el)
		}
	}
	if forgotten != 1 || len(r.m) != 1 || r.Get(live) == nil {
		t.Fatalf("%d forgotten, %d members left", forgotten, len(r.m))
	}

	// Full of live members: a newcomer waits, nobody live is evicted.
	full := ids(Max, 1)
	r = &Table{Clock: clk.now}
	for _, id := range full {
		if !r.Saw(id, "", nil) {
			t.Fatal("a member refused below the bound")
		}
	}
	newcomer := ids(1, 2)[0]
	if r.Saw(newcomer, "new", nil) || len(r.m) != Max || r.Get(newcomer) != nil {
		t.Fatal("a live member evicted for a newcomer")
	}
	// Once one member is silent past TTL, the newcomer takes its
	// place, and only its.
	clk.add(TTL)
	for _, id := range full[1:] {
		r.Saw(id, "", nil)
	}
	if !r.Saw(newcomer, "new", nil) || r.Get(newcomer) == nil || r.m[full[0]] != nil || len(r.m) != Max {
		t.Fatal("the stale member was not evicted for the newcomer")
	}
	for _, id := range full[1:] {
		if r.Get(id) == nil {
			t.Fatal("a live member was evicted")
		}
	}
}

// TestCandidatesBounded: gossiped servers wait for a hello up to
// MaxCandidates, a member is none, and each gets one round of hellos.
func TestCandidatesBounded(t *testing.T) {
	var r Table
	member := ids(1, 9)[0]
	r.Saw(member, "m", nil)
	if r.Candidate(member) {
		t.Fatal("a member taken as a candidate")
	}
	for i, id := range ids(MaxCandidates+1, 1) {
		if got := r.Candidate(id); got != (i < MaxCandidates) {
			t.Fatalf("candidate %d of bound %d taken: %v", i, MaxCandidates, got)
		}
	}
	targets := map[peer.ID]bool{}
	r.Targets(targets)
	if len(targets) != MaxCandidates+1 || !targets[member] {
		t.Fatalf("%d targets, want the member and %d candidates", len(targets), MaxCandidates)
	}
	targets = map[peer.ID]bool{}
	r.Targets(targets)
	if len(targets) != 1 {
		t.Fatalf("candidates greeted twice: %d targets", len(targets))
	}
}

// TestHelloBounded: a hello names at most wire.MaxGossip members and
// decodes only at its own protocol version.
func TestHelloBounded(t *testing.T) {
	a, err := ma.NewMultiaddr("/ip4/10.0.0.1/tcp/4001")
	if err != nil {
		t.Fatal(err)
	}
	var live []*Member
	for i := range wire.MaxGossip + 5 {
		priv, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, &Member{ID: id, Nick: fmt.Sprint(i), Addrs: []ma.Multiaddr{a}})
	}
	h := Hello(1, "me", []ma.Multiaddr{a}, live)
	if len(h.Peers) != wire.MaxGossip {
		t.Fatalf("a hello gossips %d servers, bound %d", len(h.Peers), wire.MaxGossip)
	}
	if got := Gossiped(h, live[0].ID); len(got) != wire.MaxGossip-1 || got[0].ID != live[1].ID {
		t.Fatalf("the gossip read back: %d servers", len(got))
	}
	if _, addrs, err := ParseHello(h.Marshal(), 1); err != nil || len(addrs) != 1 {
		t.Fatalf("a hello read back: %v, %d addresses", err, len(addrs))
	}
	if _, _, err := ParseHello(h.Marshal(), 2); err == nil {
		t.Fatal("a hello of another version taken")
	}
}

// TestChain (§3): the chain is this server and its live members in chain
// order, less the excluded; a server out for its refusal budget, this one
// too, is left out only while min others remain.
func TestChain(t *testing.T) {
	var live []*Member
	for _, id := range []peer.ID{"d", "b", "x", "self"} {
		live = append(live, &Member{ID: id})
	}
	none := func(peer.ID) bool { return false }
	is := func(q ...peer.ID) func(peer.ID) bool {
		return func(p peer.ID) bool { return slices.Contains(q, p) }
	}
	check := func(what string, got []peer.ID, want ...peer.ID) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("all", Chain("self", live, none, none, 2), "b", "d", "self", "x")
	check("excluded", Chain("self", live, is("x"), none, 2), "b", "d", "self")
	check("out, enough left", Chain("self", live, none, is("b", "self"), 2), "d", "x")
	check("out, too few left", Chain("self", live, none, is("b", "self", "d"), 2), "b", "d", "self", "x")
}

// TestMembers: a proposed chain is refused for a server a round blame
// excluded, for one out for its refusal budget only while enough remain
// without it, and for what more says of the others, never of self.
func TestMembers(t *testing.T) {
	chain := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}
	none := func(peer.ID) bool { return false }
	is := func(q peer.ID) func(peer.ID) bool { return func(p peer.ID) bool { return p == q } }
	if pos, err := Members(chain, "c", "prepared chain", 3, none, none, nil); err != nil || pos != 2 {
		t.Fatalf("a clean chain: %d, %v", pos, err)
	}
	if pos, err := Members(chain, "x", "prepared chain", 3, none, none, nil); err != nil || pos != -1 {
		t.Fatalf("a chain without self: %d, %v", pos, err)
	}
	if _, err := Members(chain, "c", "prepared chain", 3, is("b"), none, nil); err == nil || !strings.Contains(err.Error(), "prepared chain has") {
		t.Fatalf("an excluded server: %v", err)
	}
	if _, err := Members(chain, "c", "would-serve chain", 3, none, is("d"), nil); err == nil || !strings.Contains(err.Error(), "would-serve chain has") {
		t.Fatalf("a server out with three left: %v", err)
	}
	if _, err := Members(chain, "c", "prepared chain", 4, none, is("d"), nil); err != nil {
		t.Fatalf("a server out kept in a chain of min servers: %v", err)
	}
	seen := map[peer.ID]bool{}
	more := func(p peer.ID) error { seen[p] = true; return nil }
	if _, err := Members(chain, "c", "prepared chain", 3, none, none, more); err != nil || len(seen) != 3 || seen["c"] {
		t.Fatalf("more asked of %v", seen)
	}
}
