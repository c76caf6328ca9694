package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestRosterGossip: two servers that know only a third learn each other
// through its hellos, and all three agree on the chain.
func TestRosterGossip(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, MinServers: 9, Server: func(i int, c *node.ServerConfig) {
			c.Peers = c.Peers[:min(1, len(c.Peers))] // server 0 only
			c.Store = node.NewMemStore()
		}})
		servers := tn.Servers
		err := wait.Until(context.Background(), 20*time.Second, func() bool {
			for _, s := range servers {
				if len(s.Chain()) != 3 {
					return false
				}
			}
			return true
		})
		if err != nil {
			t.Fatalf("chains after 20 s: %d %d %d", len(servers[0].Chain()), len(servers[1].Chain()), len(servers[2].Chain()))
		}
		c0 := servers[0].Chain()
		for _, s := range servers[1:] {
			for i, id := range s.Chain() {
				if id != c0[i] {
					t.Fatalf("chains differ at %d", i)
				}
			}
		}
	})
}
