//go:build riffletest

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// chargesByPos is s's refusal counts keyed by chain position (s0, s1…).
func chargesByPos(s *Server, servers []*Server) map[string]int {
	out := map[string]int{}
	for id, k := range s.ref.refusalCounts() {
		for j, x := range servers {
			if x.h.ID() == id {
				out[fmt.Sprintf("s%d", j)] = k
			}
		}
	}
	return out
}

// TestRootWithheldSlowLink (issue 25): TestRelayedBatch's "root withheld"
// (m = 3; a corrupt S_0 refuses its batch to S_1 and announces its root
// to S_2 only, so S_1 gets it by S_2's forward) with a one-way latency on
// the links between S_1 and S_2, at a 4 s round limit. S_1's note reaches
// S_2 two fetches and two delays after the root came there, plus the
// stream's set-up. With noteLast two and a half fetches (a quarter second
// of slack), at 140 ms S_1's note was refused, S_2 lacked nothing, and
// honest S_1 was charged at every server.
func TestRootWithheldSlowLink(t *testing.T) {
	for _, lat := range []time.Duration{20 * time.Millisecond, 140 * time.Millisecond} {
		t.Run(lat.String(), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				p := testParams(64)
				p.RoundLimitMs = 4000
				bn := startBlameNetParams(t, p, 3, 3, 2, 2)
				bad := bn.servers[0]
				c := &relayRound{lackCase{bad: bad}}
				s1 := bn.servers[1].h.ID()
				bad.hooks.Store(&serverHooks{refuseSucc: c.is, rootTo: func(r uint32, p peer.ID, _ bool) bool { return p != s1 || !c.is(r) }})
				mn := testMemnet(t)
				mn.SetLink(bn.servers[1].ID(), bn.servers[2].ID(), memnet.Link{Latency: lat})
				mn.SetLink(bn.servers[2].ID(), bn.servers[1].ID(), memnet.Link{Latency: lat})
				lackShare(t, bn, 3*int(p.ChunkSize)+100)
				epoch, r := c.get(t)
				for i, s := range bn.servers {
					v := epochRanOn(t, s, epoch)
					_ = wait.Until(context.Background(), 10*time.Second, func() bool { return v == 0 || len(s.ref.refusalCounts()) > 0 })
					t.Logf("round %d: server %d: %d void, charges %v", r, i, v, chargesByPos(s, bn.servers))
					if s.ref.refusalCounts()[s1] > 0 {
						t.Errorf("honest receiver S_1 charged at server %d", i)
					}
				}
			})
		})
	}
}
