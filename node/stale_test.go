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
// runs on at the other two for good, and the next number's leader is one
// of them. An epoch that has not changed for T_lead no longer holds a
// server's turn, as it no longer holds off a Prepare: the leader
// prepares the next number, the others take it, and it is certified
// within two T_lead. Before, neither of the two led nor signed a timeout
// while their epoch "ran", and nothing was certified again.
func TestStaleEpochYieldsTurn(t *testing.T) {
	t.Skip("open (issue 25): yielding the turn once an epoch in its rounds is quiet let a corrupt minority that passes rounds on late, inside their dues, end a healthy epoch and get an honest server charged (an attacker's review); the rule is withdrawn until staleness is decided from the epoch's dues, not from quiet")
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
		if err := wait.Until(ctx, 2*node.DefaultLeaderTimeout, func() bool { return other.CertTop() > n }); err != nil {
			t.Fatalf("S_0 of %d restarted in its rounds: nothing certified past %d in %v", n, n, time.Since(killed))
		}
	})
}
