//go:build riffletest

package node

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// TestHealthyNetworkLogsNoWarning: three honest servers and six clients
// run 20 epochs, leaders taking turns, a file shared and fetched, two
// clients leaving mid-epoch and two joining, and no server or client logs
// a warning or an error: a warning is for what needs an operator. Server 1
// answers its clients over slow links, so it ends each epoch later than
// the others and refuses their Prepares while its epoch runs (errBusy):
// turn-taking, logged at debug. A client's progress says each epoch in
// one line without the chain's ids.
func TestHealthyNetworkLogsNoWarning(t *testing.T) {
	t.Parallel()
	long(t) // whole networks over many epochs: the full pass runs it, the race pass would take half a minute
	virtual(t, func(t *testing.T) {
		var logs lockedBuf
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		p := testParams(2)
		tn := startAnonNet(t, 3, 0, 6, p, func(i int, sc *ServerConfig) { sc.Logger = logger.With("self", sc.Nick) })
		ctx := context.Background()
		var clients []*Client
		var progress lockedBuf
		for i := range 6 {
			cfg := ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i%3].Addrs()[0].String(), Logger: logger.With("client", i)}
			if i == 3 {
				cfg.Progress = &progress
			}
			c, err := NewClient(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			clients = append(clients, c)
			if i%3 == 1 {
				testMemnet(t).SetLink(tn.servers[1].h.ID(), c.Inspect().PeerID(), memnet.Link{Latency: 600 * time.Millisecond})
			}
		}
		data := anonRand(t, 3*int(p.ChunkSize))
		link, err := clients[0].Share(ctx, bytes.NewReader(data), "healthy.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := clients[4].Get(ctx, link, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		if err := wait.UntilEvery(ctx, 30*time.Minute, time.Second, func() bool { return tn.servers[0].cert.Top() >= 8 }); err != nil {
			t.Fatalf("%d epochs certified in 30 min, want 8", tn.servers[0].cert.Top())
		}
		time.Sleep(1500 * time.Millisecond)
		clients[5].Close()
		clients[2].Close()
		for i := range 2 {
			c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i].Addrs()[0].String(), Logger: logger.With("client", 6+i)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}
		const epochs = 20
		if err := wait.UntilEvery(ctx, 30*time.Minute, time.Second, func() bool { return tn.servers[0].cert.Top() >= epochs }); err != nil {
			t.Fatalf("%d epochs certified in 30 min", tn.servers[0].cert.Top())
		}
		out := logs.String()
		var bad []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, " level=WARN ") || strings.Contains(l, " level=ERROR ") {
				bad = append(bad, l)
			}
		}
		if len(bad) > 0 {
			t.Fatalf("a healthy network logged %d warnings or errors:\n%s", len(bad), strings.Join(bad, "\n"))
		}
		// The client's progress: one short line an epoch, the chain's
		// size and the anonymity set, no server ids (those at debug).
		perEpoch := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
			for _, s := range tn.servers {
				if strings.Contains(l, s.h.ID().String()) || strings.Contains(l, s.h.ID().ShortString()) {
					t.Errorf("a progress line names server %s: %s", s.h.ID().ShortString(), l)
				}
			}
			if id, ok := strings.CutPrefix(l, "epoch "); ok && len(id) > 9 && id[8] == ':' {
				perEpoch[id[:8]]++
			}
		}
		if len(perEpoch) < epochs/2 {
			t.Fatalf("the client reported %d epochs:\n%s", len(perEpoch), progress.String())
		}
		for id, n := range perEpoch {
			if n > 1 {
				t.Errorf("the client reported epoch %s in %d lines:\n%s", id, n, progress.String())
			}
		}
		if !strings.Contains(out, `level=DEBUG msg="epoch put off"`) || !strings.Contains(out, errBusy.Error()) {
			t.Fatal("no Prepare was refused for a running epoch: the test does not exercise turn-taking")
		}
	})
}
