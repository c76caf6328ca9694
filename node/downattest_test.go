package node

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
)

// TestGatherDownAsked (§3, "The refusal budget"): A and B of an epoch
// over A, B, X and P. While P is only not live at B (no hello within the
// roster's TTL) and B's probe of it has not failed, B refuses A's request
// for its attestation that P was down (reviewer rev42b G5: before, B gave
// it at any lapse, and a server could collect such attestations and sign
// a backed abort later). Then both probes of P fail: each ends the epoch
// and gathers the other's attestation (evidence.Service.GatherDown's AttestReq of kind 6),
// A's request now answered by B, and both charge P. Before the wire fix,
// B refused every such request at decoding (kind 6 was no attestation
// request kind): A's abort got no attestation of B's and was signed only
// after twice the probe and the settle time (B added its own when it came).
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

		if got := a.askAttests(ea, wire.AbortDown, uint32(j), p); len(got) != 0 {
			t.Errorf("B attested P down before its probe of P failed: %+v", got)
		}

		for _, s := range []*Server{a, b} {
			s.roster.saw(p, "", nil)
		}
		start := time.Now()
		for _, s := range []*Server{a, b} {
			go s.onServerDisconnect(p) // the probe fails: P has no address
		}
		_ = wait.Until(context.Background(), time.Minute, func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			return ea.ended
		})
		got := a.askAttests(ea, wire.AbortDown, uint32(j), p)
		if len(got) != 1 || got[0].Signer != uint16(chainPos(ids, b.ID())) || got[0].Lacking != 1<<uint(j) {
			t.Fatalf("A asked B whether P was down after both probes failed: got %+v, want B's attestation", got)
		}
		want := map[string]int{"P": 1}
		counts := func(s *Server) map[string]int {
			c := map[string]int{}
			for q, n := range s.ref.RefusalCounts() {
				c[name[q]] = n
			}
			return c
		}
		_ = wait.Until(context.Background(), time.Minute, func() bool { return maps.Equal(counts(a), want) && maps.Equal(counts(b), want) })
		took := time.Since(start)
		for _, s := range []*Server{a, b} {
			if c := counts(s); !maps.Equal(c, want) {
				t.Errorf("%s counts %v after the down aborts; want %v", name[s.ID()], c, want)
			}
		}
		t.Logf("P charged at both %v after the probes began (probe %v)", took, a.cfg.Timing.ServerProbe)
		if limit := 2 * a.cfg.Timing.ServerProbe; took >= limit {
			t.Errorf("P charged at both only %v after the probes began; a backed abort is signed within %v", took, limit)
		}
	})
}
