//go:build riffletest

package localnet

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// TestBenchResumesPausedJobs: clients whose jobs may send real traffic in
// one epoch only (J = 1) share files that take several epochs. Without the
// bench's user (KeepGoing) both shares pause and never end while cover
// rounds go on; with it the shares end, every pause is resumed and
// counted, and the fetched bytes equal the shared ones.
func TestBenchResumesPausedJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		p := node.Params{ChunkSize: node.MinChunkSize, K: 1, W: 2, Rounds: 4, MaxClients: node.MinClientCap, MaxRows: 16,
			RegWindowMs: 500, RoundLimitMs: 20000, RoundIntervalMs: node.MinRoundIntervalMs}
		net, err := Start(ctx, Config{Clients: 2, Params: p, Network: memnet.New(memnet.Link{Latency: time.Millisecond}, 1),
			Client: func(_ int, c *client.ClientConfig) { c.JobEpochs = 1 }})
		if err != nil {
			t.Fatal(err)
		}
		defer net.Close()
		for _, c := range net.Clients {
			if _, err := c.ChunkSize(ctx); err != nil {
				t.Fatal(err)
			}
		}
		files := make([][]byte, 2)
		for i := range files {
			files[i] = make([]byte, 12*node.MinChunkSize)
			rand.Read(files[i])
		}

		// Nobody lets the jobs go on: they pause after their one epoch.
		short, cancelShort := context.WithTimeout(ctx, 2*time.Minute)
		_, _, err = benchShare(short, net.Clients, files)
		cancelShort()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("shares without the bench's user: %v, want them still waiting", err)
		}

		// The bench's user: within as long as the network had above,
		// five times over.
		ctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		stop := KeepGoing(ctx, net.Clients, nil)
		links, _, err := benchShare(ctx, net.Clients, files)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		dir := t.TempDir()
		path, err := net.Clients[0].Get(ctx, links[1], dir)
		resumed := stop()
		if err != nil {
			t.Fatal(err)
		}
		if resumed < 2 {
			t.Errorf("%d jobs resumed, want both shares at least", resumed)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, files[1]) {
			t.Fatalf("fetched %d bytes (%v), want the %d shared", len(got), err, len(files[1]))
		}
	})
}
