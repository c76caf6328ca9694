package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
)

// TestStaggeredOpenFramesSigner: a leader that holds its registration
// open (as in TestLeaderHoldsOpen) and also sends its signed open
// descriptor to one server V at once but to the others (but itself) T_lead·3 later.
// Each server counts its registration deadline from its own receipt of
// the open descriptor, so V is the first whose deadline plus T_lead
// passes: V signs the "registration never closed" abort. Every other
// server's deadline is not yet T_lead/2 past (refusals.go
// noteAbortLocked), so each charges the signer V, an honest server, and
// not the leader: one corrupt leader chooses whom the group charges, and
// the honest servers disagree (V charges the leader).
func TestStaggeredOpenFramesSigner(t *testing.T) {
	virtual(t, func(t *testing.T) {
		const lead = 2 * time.Second
		fn := startFounded(t, 4, 4, 2, testParams(2), func(i int, c *ServerConfig) {
			c.LeaderTimeout = lead
			c.MinServers = 3
		})
		fn.waitEpochs(t, 0, 2*time.Minute)
		bad, victim := fn.servers[0], fn.servers[1]
		bad.hooks.Store(&serverHooks{
			holdOpen: func() bool { return true },
			openLate: func(p peer.ID) time.Duration {
				if p == victim.ID() || p == bad.ID() {
					return 0
				}
				return 3 * lead
			},
		})
		// One of the bad leader's turns ends in a no-close abort.
		noClose := func() bool {
			for _, s := range fn.servers[1:] {
				for n := s.certTop(); n > 0 && n+8 > s.certTop(); n-- {
					if c, ok := s.certOf(n); ok && c.Kind == wire.CertAbort {
						var a wire.Abort
						if a.Unmarshal(c.Abort) == nil && a.Kind == wire.AbortNoClose {
							t.Logf("number %d: no-close abort signed by %s (victim %s, leader %s): %s", n, peer.ID(a.Signer).ShortString(), victim.ID().ShortString(), bad.ID().ShortString(), a.Reason)
							return true
						}
					}
				}
			}
			return false
		}
		if err := wait.Until(context.Background(), 3*time.Minute, noClose); err != nil {
			t.Fatalf("no no-close abort; numbers %v", fn.numbers())
		}
		time.Sleep(10 * time.Second) // the abort's relays and charges settle
		for i, s := range fn.servers[1:] {
			c := s.refusalCounts()
			t.Logf("server %d charges: leader %d, victim %d", i+1, c[bad.ID()], c[victim.ID()])
		}
		for i, s := range fn.servers[1:] {
			if n := s.refusalCounts()[victim.ID()]; n != 0 {
				t.Errorf("server %d charged the honest victim %d times for the leader's held registration", i+1, n)
			}
			if n := s.refusalCounts()[bad.ID()]; n < 1 {
				t.Errorf("server %d did not charge the leader that held its registration", i+1)
			}
		}
	})
}
