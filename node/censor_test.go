package node_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestLeaderFetchesOmitted: a leader whose store lacks chunks the other
// servers hold proposes request lists without them; the others refuse
// such a list (it omits requested ids they hold, §5.3) and name the ids;
// the leader fetches them and proposes again, so the get completes.
// Without the fetch every round's list was refused; without the refusal
// the ids were left out for ever.
func TestLeaderFetchesOmitted(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs a loopback network")
		}
		net := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 3, Params: node.TestParams(32),
			Server: func(_ int, c *node.ServerConfig) { c.Store = node.NewMemStore() }})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		data := nodetest.RandBytes(t, 40<<10)
		link, err := net.Clients[0].Share(ctx, bytes.NewReader(data), "omitted.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		leader := 0
		for i, s := range net.Servers {
			if s.ID() == net.Servers[0].Chain()[0] {
				leader = i
			}
		}
		if !net.Servers[leader].ForgetChunks() {
			t.Fatal("the leader's store is not in memory")
		}
		gctx, gcancel := context.WithTimeout(ctx, 60*time.Second)
		defer gcancel()
		path, err := net.Clients[1].Get(gctx, link, t.TempDir())
		if err != nil {
			t.Fatalf("get of chunks only the other servers held: %v", err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched bytes differ (%v)", err)
		}
	})
}
