package node

import (
	"maps"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestGatherDownAsked (§3, "The refusal budget"): A and B of an epoch
// over A, B, X and P, where P is gone from both rosters. A asks B for
// its attestation that P was down (gatherDown's AttestReq of kind 6) and
// gets it; A signs its abort at once, backed by two of the three others,
// and it charges P at A and at B. Before, B refused the request at
// decoding (kind 6 was no attestation request kind): A got none and
// signed only after twice the probe and the settle time (B added its own
// attestation when the abort came).
func TestGatherDownAsked(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		a, b := loneServer(t), loneServer(t)
		defer a.Close()
		defer b.Close()
		_, x := replayKey(t)
		_, p := replayKey(t)
		ids := []peer.ID{a.ID(), b.ID(), x, p}
		sortChain(ids)
		name := map[peer.ID]string{a.ID(): "A", b.ID(): "B", x: "X", p: "P"}
		ea := fixtureChain(t, a, ids, chainPos(ids, a.ID()))
		fixtureChain(t, b, ids, chainPos(ids, b.ID()))
		a.roster.saw(b.ID(), "", nil)
		a.roster.saw(x, "", nil)
		b.roster.saw(a.ID(), "", nil)
		b.roster.saw(x, "", nil)
		a.h.AddAddrs(b.ID(), b.h.Addrs(), time.Hour)
		b.h.AddAddrs(a.ID(), a.h.Addrs(), time.Hour)
		j := chainPos(ids, p)

		got := a.askAttests(ea, wire.AbortDown, uint32(j), p)
		if len(got) != 1 || got[0].Signer != uint16(chainPos(ids, b.ID())) || got[0].Lacking != 1<<uint(j) {
			t.Fatalf("A asked B whether P was down: got %+v, want B's attestation", got)
		}

		start := time.Now()
		a.gatherDown(ea, j)
		if took := time.Since(start); took >= a.cfg.Timing.ServerProbe {
			t.Errorf("A's down abort took %v to gather its backing (the probe is %v)", took, a.cfg.Timing.ServerProbe)
		}
		time.Sleep(time.Second) // virtual: the charge reaches B
		want := map[string]int{"P": 1}
		for _, s := range []*Server{a, b} {
			c := map[string]int{}
			for q, n := range s.ref.RefusalCounts() {
				c[name[q]] = n
			}
			if !maps.Equal(c, want) {
				t.Errorf("%s counts %v after A's down abort; want %v", name[s.ID()], c, want)
			}
		}
	})
}
