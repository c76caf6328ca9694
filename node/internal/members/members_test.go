package members

import (
	"fmt"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/eligible"
	"github.com/riffle-net/riffle/node/internal/roster"
)

type host struct {
	self     peer.ID
	excluded map[peer.ID]bool
	out      map[peer.ID]bool
}

func (h *host) Self() peer.ID                  { return h.self }
func (h *host) Excluded(p peer.ID) bool        { return h.excluded[p] }
func (h *host) OutAt(p peer.ID, _ uint64) bool { return h.out[p] }
func (h *host) LastNumber() uint64             { return 0 }

type certsKept struct {
	top    uint64
	groups map[uint64]map[peer.ID]bool
}

func (c *certsKept) Top() uint64                  { return c.top }
func (c *certsKept) Next() uint64                 { return c.top + 1 }
func (c *certsKept) Of(uint64) (*wire.Cert, bool) { return nil, false }
func (c *certsKept) Group(n uint64) (map[peer.ID]bool, bool) {
	g, ok := c.groups[n]
	return g, ok
}

// chains: self S and live servers A, B, C, D; the group's founders are
// S, A and B, so at number 1 only they are of the group chain.
func chains(t *testing.T) (*Chains, *host, []peer.ID) {
	t.Helper()
	ids := make([]peer.ID, 5)
	for i := range ids {
		ids[i] = peer.ID(fmt.Sprintf("server-%d", i))
	}
	h := &host{self: ids[0], excluded: map[peer.ID]bool{}, out: map[peer.ID]bool{}}
	r := &roster.Table{}
	for _, p := range ids[1:] {
		r.Saw(p, "", nil)
	}
	w := &eligible.Table{}
	w.Init(nil, -1, ids[:3], nil)
	c := &Chains{H: h, Roster: r, Who: w, Certs: &certsKept{groups: map[uint64]map[peer.ID]bool{}}, Min: 3}
	return c, h, ids
}

func sorted(ids ...peer.ID) []peer.ID {
	out := slices.Clone(ids)
	roster.SortChain(out)
	return out
}

// TestDerived (§3 v3): the chain of the number after a certificate's is
// the group chain joined with the live servers of the certificate's
// chain that are neither blamed nor out for their refusal budget.
func TestDerived(t *testing.T) {
	c, h, ids := chains(t)
	S, A, B, C, D := ids[0], ids[1], ids[2], ids[3], ids[4]
	if got, want := c.Group(), sorted(S, A, B); !slices.Equal(got, want) {
		t.Fatalf("group chain at number 1: %v, want the founders %v", got, want)
	}
	prev := &wire.Cert{Kind: wire.CertFinal, Number: 1, Chain: [][]byte{[]byte(A), []byte(C), []byte(D)}}
	if got, want := c.Derived(prev), sorted(S, A, B, C, D); !slices.Equal(got, want) {
		t.Fatalf("derived: %v, want %v", got, want)
	}
	h.excluded[C], h.out[D] = true, true
	if got, want := c.Derived(prev), sorted(S, A, B); !slices.Equal(got, want) {
		t.Fatalf("derived, C blamed and D out for its budget: %v, want %v", got, want)
	}
	if got, want := c.Derived(nil), c.Group(); !slices.Equal(got, want) {
		t.Fatalf("derived without a certificate: %v, want the group chain %v", got, want)
	}
}

// TestGroupPeer: a server of a certified group is of the group; a live
// roster server only if eligible by the group's rules; a blamed one
// never; a peer off the roster only through a certificate.
func TestGroupPeer(t *testing.T) {
	c, h, ids := chains(t)
	A, C := ids[1], ids[3]
	outsider := peer.ID("not-on-the-roster")
	if !c.GroupPeer(A) || c.GroupPeer(C) || c.GroupPeer(outsider) {
		t.Fatalf("founder %v, non-founder %v, outsider %v", c.GroupPeer(A), c.GroupPeer(C), c.GroupPeer(outsider))
	}
	c.Certs.(*certsKept).groups[1] = map[peer.ID]bool{C: true, outsider: true}
	if !c.CertPeer(C) || !c.GroupPeer(C) || !c.GroupPeer(outsider) {
		t.Fatal("a server of the certified group is not of the group")
	}
	h.excluded[C] = true
	if c.CertPeer(C) || c.GroupPeer(C) {
		t.Fatal("a blamed server is of the group")
	}
}

// TestCandidates (§3 "Admission to chains"): a leader records the live
// servers outside its chain, not blamed, that no certificate of the window
// holds or records, the first sighted first, at most wire.MaxCands, sorted;
// none while probation is off.
func TestCandidates(t *testing.T) {
	ids := make([]peer.ID, 3+wire.MaxCands+2)
	for i := range ids {
		ids[i] = peer.ID(fmt.Sprintf("server-%02d", i))
	}
	self, inChain, recorded := ids[0], ids[1], ids[2]
	blamed, rest := ids[3], ids[4:]
	h := &host{self: self, excluded: map[peer.ID]bool{blamed: true}, out: map[peer.ID]bool{}}
	r := &roster.Table{}
	w := &eligible.Table{}
	w.Init(nil, 3, nil, nil)
	for i, p := range ids[1:] {
		r.Saw(p, "", nil)
		w.Saw(p, uint64(100-i)) // the last ids sighted first
	}
	log := map[uint64]*wire.Cert{9: {Kind: wire.CertFinal, Number: 9, Chain: [][]byte{[]byte(self)}, Cands: [][]byte{[]byte(recorded)}}}
	w.SetLog(func(n uint64) (*wire.Cert, bool) { c, ok := log[n]; return c, ok })
	c := &Chains{H: h, Roster: r, Who: w, Certs: &certsKept{}, Min: 3}
	got := c.Candidates(10, []peer.ID{self, inChain})
	want := sorted(rest[len(rest)-wire.MaxCands:]...)
	if len(got) != len(want) {
		t.Fatalf("candidates %q, want %q", got, want)
	}
	for i := range got {
		if peer.ID(got[i]) != want[i] {
			t.Fatalf("candidates %q, want %q", got, want)
		}
	}
	off := &eligible.Table{}
	off.Init(nil, -1, nil, nil)
	c.Who = off
	if got := c.Candidates(10, []peer.ID{self}); got != nil {
		t.Fatalf("candidates %q with probation off", got)
	}
}

// TestLapsedCandidatesGoBehindNewcomers: K live peer ids said hello before
// a newcomer X and withdraw from every chain, so that none ever joins one;
// one honest leader leads every number and records its candidates, 8 a
// number. A candidacy record lapses after SeenWindow numbers; a peer whose
// record lapsed goes behind every peer never recorded, so X's record comes
// within ⌈(K+1)/8⌉ numbers of its sighting (§3, m = 1). Ordered by first
// sighting alone, K ≥ 8·33 = 264 lapsed peers filled every number's 8
// records for good and X was never recorded.
func TestLapsedCandidatesGoBehindNewcomers(t *testing.T) {
	for _, k := range []int{200, 263, 264, 600} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			self := peer.ID("server-self")
			h := &host{self: self, excluded: map[peer.ID]bool{}, out: map[peer.ID]bool{}}
			r := &roster.Table{}
			w := &eligible.Table{}
			w.Init(nil, 0, nil, nil)
			for i := range k {
				p := peer.ID(fmt.Sprintf("sybil-%04d", i))
				r.Saw(p, "", nil)
				w.Saw(p, 1)
			}
			x := peer.ID("newcomer-x")
			r.Saw(x, "", nil)
			w.Saw(x, 2)
			log := map[uint64]*wire.Cert{}
			w.SetLog(func(n uint64) (*wire.Cert, bool) { c, ok := log[n]; return c, ok })
			c := &Chains{H: h, Roster: r, Who: w, Certs: &certsKept{}, Min: 1}
			bound := uint64((k + 1 + wire.MaxCands - 1) / wire.MaxCands)
			var recordedAt uint64
			for n := uint64(2); n < 2+200 && recordedAt == 0; n++ {
				cands := c.Candidates(n, []peer.ID{self})
				log[n] = &wire.Cert{Kind: wire.CertFinal, Number: n, Chain: [][]byte{[]byte(self)}, Cands: cands}
				if slices.ContainsFunc(cands, func(b []byte) bool { return peer.ID(b) == x }) {
					recordedAt = n
				}
			}
			if recordedAt == 0 || recordedAt >= 2+bound {
				t.Errorf("K = %d peers sighted first: the newcomer was recorded at number %d (0: never), not within %d numbers of its sighting at 2", k, recordedAt, bound)
			}
		})
	}
}
