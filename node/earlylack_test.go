//go:build riffletest

package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// TestEarlyLackFramesNoOne (issue 25, found by an attacker's review): of
// four servers, a corrupt S_2 tells S_0 alone that it lacks its input of
// round 1 as soon as the round opens, and passes the round on late but
// within its part's due (every server's round 1 goes out 1 s late here,
// inside the 2 s a hop has). S_0 had the round signed void bodyWait
// (0.5 s) after the claim; no other server had the claim or a part due,
// so none attested a part missing, and the void, backed by nobody, was
// charged to its proposer, the honest S_0. Now S_0 proposes the void only
// once the claimant's own part is due here: by then the claimant has
// passed the round on (it was never short of its input), and the round is
// published.
func TestEarlyLackFramesNoOne(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 4, 4, 2, 2)
		for _, s := range bn.servers {
			s.hooks.Store(&serverHooks{lateOut: func(r uint32) time.Duration {
				if r == 1 {
					return time.Second
				}
				return 0
			}})
		}
		var (
			mu    sync.Mutex
			epoch [32]byte
			sent  bool
		)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// As soon as round 1 is open at some epoch's S_0: that S_0
			// and the epoch's S_2.
			var (
				s0       *Server
				id       [32]byte
				claimant peer.ID
			)
			if wait.Until(ctx, 10*time.Minute, func() bool {
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
			}) != nil {
				return
			}
			for _, c := range bn.servers {
				if c.ID() == claimant {
					c.mu.Lock()
					claim := c.signAttestLocked(c.epochs[id], wire.ClaimLack, 1, 1<<1)
					c.mu.Unlock()
					body := claim.Marshal()
					_, err := transport.Call(ctx, c.h, s0.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeLack, Body: body, Timeout: transport.ShortTimeout})
					mu.Lock()
					epoch, sent = id, err == nil
					mu.Unlock()
				}
			}
		}()
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		mu.Lock()
		id, ok := epoch, sent
		mu.Unlock()
		if !ok {
			t.Fatal("the early lack claim was not taken")
		}
		for i, s := range bn.servers {
			if v := epochRanOn(t, s, id); v != 0 {
				t.Errorf("server %d: %d void round(s), want none (charges %v)", i, v, s.ref.RefusalCounts())
			}
		}
		for i, s := range bn.servers {
			if err := wait.Until(context.Background(), 10*time.Second, func() bool { return len(s.ref.RefusalCounts()) == 0 }); err != nil {
				t.Errorf("server %d charged %v for a claim made before the claimant's part was due", i, s.ref.RefusalCounts())
			}
		}
	})
}
