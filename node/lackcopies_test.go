//go:build riffletest

package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// TestLackCopiesOneWait (issue 25): a chain server resends one valid lack
// claim of round 1 to S_0 200 times. Before, S_0 started a goroutine for
// each copy, each waiting up to the void (200 waits: unbounded in the
// copies); now one a claimant and round.
func TestLackCopiesOneWait(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs = 4000
		// Paced so that round 1 stays in the window while the copies go.
		p.RoundIntervalMs = 3000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		var waits atomic.Int64
		for _, s := range bn.servers {
			s.hooks.Store(&serverHooks{voidWait: func(uint32) { waits.Add(1) }})
		}
		var (
			s0       *Server
			id       [32]byte
			claimant peer.ID
		)
		if err := wait.Until(context.Background(), 10*time.Minute, func() bool {
			for _, s := range bn.servers {
				s.mu.Lock()
				for eid, e := range s.epochs {
					if _, open := e.openAt[1]; open && e.pos == 0 && e.final != nil && !e.ended {
						s0, id, claimant = s, eid, e.final.Chain[2]
					}
				}
				s.mu.Unlock()
			}
			return s0 != nil
		}); err != nil {
			t.Fatal("no round 1 opened at an S_0")
		}
		var c *Server
		for _, s := range bn.servers {
			if s.ID() == claimant {
				c = s
			}
		}
		c.mu.Lock()
		claim := c.signAttestLocked(c.epochs[id], wire.ClaimLack, 1, 1<<1)
		c.mu.Unlock()
		body := claim.Marshal()
		const copies = 200
		taken := 0
		for range copies {
			_, err := transport.Call(context.Background(), c.h, s0.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeLack, Body: body, Timeout: transport.ShortTimeout})
			if err == nil {
				taken++
			}
		}
		if taken != copies {
			t.Fatalf("S_0 took %d of %d copies", taken, copies)
		}
		if n := waits.Load(); n != 1 {
			t.Errorf("%d copies of one claim started %d void waits at S_0, want 1", copies, n)
		}
	})
}
