//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
)

// The attacks of this file were found by an attacker's review: each
// charged an honest server from when something reached one server (its
// own clock). Charges now follow from absences that more than half of the
// chain attests in signed form (charges.go; docs/testing.md, "Attacks on
// the control plane").

// TestStaggeredOpenFramesSigner: a leader that holds its registration
// open (as in TestLeaderHoldsOpen) and also sends its signed open
// descriptor to one server V at once but to the others (but itself) T_lead·3 later.
// Each server counts its registration deadline from its own receipt of
// the open descriptor, so V is the first whose deadline plus T_lead
// passes. Before, V signed the "registration never closed" abort at once
// and every other server, its deadline not yet T_lead/2 past, charged V,
// an honest server, not the leader. Now V signs it only once more than
// half of the chain's servers other than the leader attest that no close
// came by their own deadlines, and the attested abort charges the leader
// at every server.
func TestStaggeredOpenFramesSigner(t *testing.T) {
	t.Parallel()
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
				for n := s.cert.Top(); n > 0 && n+8 > s.cert.Top(); n-- {
					if c, ok := s.cert.Of(n); ok && c.Kind == wire.CertAbort {
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
		// Epochs of the other leaders go on, and a share made now is
		// fetched whole.
		took := fn.waitEpochs(t, fn.epochs(), 2*time.Minute)
		fn.shareFetch(t, 5*time.Minute)
		t.Logf("next epoch %v after the abort", took.Round(100*time.Millisecond))
		time.Sleep(10 * time.Second) // the abort's relays and charges settle
		for i, s := range fn.servers[1:] {
			c := s.ref.RefusalCounts()
			t.Logf("server %d charges: leader %d, victim %d", i+1, c[bad.ID()], c[victim.ID()])
		}
		for i, s := range fn.servers[1:] {
			if n := s.ref.RefusalCounts()[victim.ID()]; n != 0 {
				t.Errorf("server %d charged the honest victim %d times for the leader's held registration", i+1, n)
			}
			if n := s.ref.RefusalCounts()[bad.ID()]; n < 1 {
				t.Errorf("server %d did not charge the leader that held its registration", i+1)
			}
		}
	})
}

// TestSilentMiddleFramesLast: the middle server of three passes nothing on
// for round 1 of each epoch, neither its batch nor its signed root. The last server,
// told of no batch, never watches for its input nor claims a lack; S_0
// waits the round limit for the publication and has the round signed
// void. Before, each server judged "due" on its own clock: S_0 and the
// middle server charged the last server, the last server charged S_0, the
// void's proposer, and the middle server was never charged. Now every
// server adds to the void its signed attestation of the parts it lacked,
// and the void charges the first part that more than half of the others
// lacked: the middle server's, at every server.
func TestSilentMiddleFramesLast(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(64) // room for a void round's chunks 32 rounds on (resendHold)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		c := &lackCase{bad: bn.servers[1]}
		// Asked twice a round (root, then batch): the same answer.
		silent := func(r uint32) bool {
			c.mu.Lock()
			fired, at := c.fired, c.round
			c.mu.Unlock()
			if fired {
				return r == at
			}
			return c.once(r)
		}
		c.bad.hooks.Store(&serverHooks{silentOut: silent})
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		epoch, r := c.get(t)
		for i, s := range bn.servers {
			if v := epochRanOn(t, s, epoch); v != 1 {
				t.Fatalf("server %d: %d void round(s), want 1", i, v)
			}
		}
		time.Sleep(5 * time.Second)
		s0, last := bn.servers[0].h.ID(), bn.servers[2].h.ID()
		for i, s := range bn.servers {
			got := s.ref.RefusalCounts()
			t.Logf("server %d counts: S_0 %d, S_1 %d, last %d; out for the budget: S_0 %v, last %v", i, got[s0], got[c.bad.h.ID()], got[last], s.refusalOut(s0), s.refusalOut(last))
		}
		for _, i := range []int{0, 2} {
			got := bn.servers[i].ref.RefusalCounts()
			if got[s0] != 0 || got[last] != 0 {
				t.Errorf("server %d charged an honest server for round %d that the middle server kept: %v", i, r, got)
			}
			if got[c.bad.h.ID()] < 1 {
				t.Errorf("server %d did not charge the middle server that kept round %d: %v", i, r, got)
			}
		}
	})
}
