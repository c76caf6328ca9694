package localnet

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
)

// TestStartAndClose: a started network of 3 servers and 2 clients runs an
// epoch (both clients join it, each through its own primary), and Close
// stops everything and removes the temporary data directory.
func TestStartAndClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := node.Params{ChunkSize: 16 << 10, K: 1, W: 2, Rounds: 8, MaxClients: node.MinClientCap, MaxRows: 16, RegWindowMs: 300, RoundLimitMs: 20000, RoundIntervalMs: node.MinRoundIntervalMs}
	primaries := make([]string, 2)
	n, err := Start(ctx, Config{Clients: 2, Params: p, Logger: Logger(),
		Client: func(i int, c *client.ClientConfig) { primaries[i] = c.Server }})
	if err != nil {
		t.Fatal(err)
	}
	dir := n.tmp
	if len(n.Servers) != DefaultServers || len(n.Clients) != 2 || dir == "" {
		t.Fatalf("%d servers, %d clients, data in %q", len(n.Servers), len(n.Clients), dir)
	}
	if primaries[0] != n.Addr(0) || primaries[1] != n.Addr(1) {
		t.Fatalf("clients' primaries %v, want servers 0 and 1", primaries)
	}
	err = wait.Until(ctx, time.Minute, func() bool {
		return n.Clients[0].AnonymitySet() == 2 && n.Clients[1].AnonymitySet() == 2
	})
	if err != nil {
		t.Fatalf("no epoch with both clients: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("data directory left behind: %v", err)
	}
}
