package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
)

// TestStaleEpochYieldsTurn (the swarm's seed 91): S_0 of an epoch in its
// rounds is killed and restarted at once; the epoch is gone there and
// runs on at the other two, and the next number's leader is one of them.
// Its round with no part from S_0 goes stale by its dues there
// (blame.Dues.Stale): they end the epoch with the abort of the missing
// publication, which the attestations of both charge to S_0, whose part
// never came; the leader prepares the next number and it is certified.
// Before, neither of the two led nor signed a timeout while their epoch
// "ran", and nothing was certified again.
func TestStaleEpochYieldsTurn(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		const m = 3
		cn := startCrashNetWith(t, m, node.TestParams(64), func(c *node.ServerConfig) { c.Probation = -1 })
		ctx := context.Background()
		index := map[peer.ID]int{}
		for i, s := range cn.net.Servers {
			index[s.ID()] = i
		}
		// An epoch N of all three in its rounds everywhere, whose S_0
		// does not lead N+1.
		var n uint64
		var chain []peer.ID
		if err := wait.Until(ctx, 2*time.Minute, func() bool {
			n, chain = cn.net.Servers[0].RoundEpoch()
			if n == 0 || len(chain) != m || chain[(n+1)%m] == chain[0] {
				return false
			}
			for _, s := range cn.net.Servers {
				if k, _ := s.RoundEpoch(); k != n {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatalf("no epoch of the three in its rounds whose S_0 does not lead the next: %v", err)
		}
		first := index[chain[0]]
		cn.net.Servers[first].Crash()
		cn.restart(first)
		killed := time.Now()
		other := cn.net.Servers[index[chain[(n+1)%m]]]
		// Stale three round limits after the last part's due (about
		// 2.5 limits after the round opened), the publication asked a
		// limit, then T_lead for the next number.
		lim := time.Duration(node.TestParams(64).RoundLimitMs) * time.Millisecond
		if err := wait.Until(ctx, 8*lim+2*node.DefaultLeaderTimeout, func() bool { return other.CertTop() > n }); err != nil {
			t.Fatalf("S_0 of %d restarted in its rounds: nothing certified past %d in %v", n, n, time.Since(killed))
		}
		t.Logf("number %d certified %v after S_0's restart", n+1, time.Since(killed))
		for i, s := range cn.net.Servers {
			if i == first {
				continue
			}
			if err := wait.Until(ctx, time.Minute, func() bool { return s.Refusals()[chain[0]] > 0 }); err != nil {
				t.Errorf("server %d: S_0, whose part never came, not charged: %v", i, s.Refusals())
			}
			for p, c := range s.Refusals() {
				if p != chain[0] && c > 0 {
					t.Errorf("server %d: server %d charged, not S_0", i, index[p])
				}
			}
		}
	})
}
