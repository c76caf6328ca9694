package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

// testParams keep end-to-end tests fast: 16 KiB chunks, 2 request slots.
func testParams(R int) wire.Params {
	return wire.Params{ChunkSize: 16 << 10, K: 2, W: 2, Rounds: uint32(R), MaxClients: MinClientCap, MaxRows: 64, RegWindowMs: 300, RoundLimitMs: 20000}
}

func testLogger(t testing.TB) *slog.Logger {
	switch os.Getenv("RIFFLE_DEBUG") {
	case "":
	case "info":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	default:
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

type testNet struct {
	servers []*Server
	clients []*Client
}

func startNet(t testing.TB, m, n int, p wire.Params) *testNet {
	t.Helper()
	ctx := context.Background()
	tn := &testNet{}
	var peers []string
	for i := 0; i < m; i++ {
		s, err := NewServer(ctx, ServerConfig{DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: peers,
			Nick: fmt.Sprintf("s%d", i), MinServers: m, MinClients: n, NoLAN: true, Params: p, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		tn.servers = append(tn.servers, s)
		peers = append(peers, s.Addrs()[0].String())
	}
	for i := 0; i < n; i++ {
		s := tn.servers[i%m]
		c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Server: s.Addrs()[0].String(), Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		tn.clients = append(tn.clients, c)
	}
	return tn
}

func randBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEndToEnd(t *testing.T) {
	tn := startNet(t, 3, 8, testParams(64))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sizes := []int{0, 1, 16 << 10, 16<<10 + 1}
	if !testing.Short() {
		sizes = append(sizes, 3<<20)
	}
	type res struct {
		data []byte
		path string
		err  error
	}
	var wg sync.WaitGroup
	out := make([]res, len(sizes))
	for i, size := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := randBytes(t, size)
			up := tn.clients[i%len(tn.clients)]
			down := tn.clients[(i+3)%len(tn.clients)]
			link, err := up.Share(ctx, bytes.NewReader(data), fmt.Sprintf("f%d.bin", size), i == 2)
			if err != nil {
				out[i] = res{err: fmt.Errorf("share %d B: %w", size, err)}
				return
			}
			dir := t.TempDir()
			path, err := down.Get(ctx, link, dir)
			out[i] = res{data: data, path: path, err: err}
		}()
	}
	wg.Wait()
	for i, r := range out {
		if r.err != nil {
			t.Fatalf("size %d: %v", sizes[i], r.err)
		}
		got, err := os.ReadFile(r.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, r.data) {
			t.Fatalf("size %d: fetched bytes differ (%d vs %d)", sizes[i], len(got), len(r.data))
		}
		if filepath.Dir(r.path) == "" {
			t.Fatal("no path")
		}
	}
	if a := tn.clients[0].AnonymitySet(); a != 8 {
		t.Fatalf("anonymity set %d, want 8", a)
	}
	idx, err := tn.clients[1].Index(ctx)
	if err != nil || len(idx) < len(sizes) {
		t.Fatalf("index: %d entries, %v", len(idx), err)
	}
}
