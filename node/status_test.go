package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
)

// Status of a live server and client: the roster holds the other servers,
// the epoch's chain all of them in order, the anonymity set every client,
// and once rounds run, a round time and a throughput (read while the
// network runs, so that -race sees the reads against the epoch's writes).
func TestStatus(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, Params: node.TestParams(64)})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var st node.ServerStatus
		if err := wait.Until(ctx, time.Minute, func() bool {
			st = tn.Servers[0].Status()
			return st.Epoch != "" && st.RoundTime > 0
		}); err != nil {
			t.Fatalf("no timed epoch in the server's status: %+v", st)
		}
		if len(st.Roster) != 2 || len(st.Chain) != 3 || st.AnonymitySet != 2 || st.Throughput <= 0 || st.ChunkSize <= 0 || st.EpochRounds != 64 {
			t.Fatalf("server status %+v", st)
		}
		var cs client.ClientStatus
		if err := wait.Until(ctx, time.Minute, func() bool {
			cs = tn.Clients[0].Status()
			return cs.Epoch != "" && cs.RoundTime > 0
		}); err != nil {
			t.Fatalf("no timed epoch in the client's status: %+v", cs)
		}
		if cs.Primary == "" || len(cs.Chain) != 3 || cs.AnonymitySet != 2 || cs.Throughput <= 0 || cs.Waiting != "" {
			t.Fatalf("client status %+v", cs)
		}
	})
}
