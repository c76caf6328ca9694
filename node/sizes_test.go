package node

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

type sent struct {
	t    wire.Type
	size int
}

type recorder struct {
	mu  sync.Mutex
	log []sent
}

func (r *recorder) add(t wire.Type, size int) {
	r.mu.Lock()
	r.log = append(r.log, sent{t, size})
	r.mu.Unlock()
}

func (r *recorder) snapshot() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.log...)
}

// TestWireSizesEqual records every frame that clients send, at the stream
// level, and checks that a client that shares, one that fetches and one
// that idles send exactly the same sequence of message types and sizes
// (§1: sizes and timing never depend on what a user does).
func TestWireSizesEqual(t *testing.T) {
	const m, n = 3, 6
	p := testParams(32)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var servers []*Server
	var peers []string
	for i := 0; i < m; i++ {
		s, err := NewServer(ctx, ServerConfig{DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: peers,
			MinServers: m, MinClients: n, NoLAN: true, Params: p, Store: NewMemStore(), Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		servers = append(servers, s)
		peers = append(peers, s.Addrs()[0].String())
	}
	recs := make([]*recorder, n)
	clients := make([]*Client, n)
	for i := range clients {
		recs[i] = &recorder{}
		c, err := NewClient(ctx, ClientConfig{Server: servers[i%m].Addrs()[0].String(), OnSend: recs[i].add, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	data := randBytes(t, 40<<10)
	link, err := clients[0].Share(ctx, bytes.NewReader(data), "sizes.bin", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clients[1].Get(ctx, link, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	sharer, fetcher, idle := recs[0].snapshot(), recs[1].snapshot(), recs[2].snapshot()
	k := min(len(sharer), len(fetcher), len(idle))
	queries := 0
	for i := 0; i < k; i++ {
		if sharer[i] != fetcher[i] || sharer[i] != idle[i] {
			t.Fatalf("frame %d differs: sharer %v, fetcher %v, idle %v", i, sharer[i], fetcher[i], idle[i])
		}
		if sharer[i].t == wire.TypeQuery {
			queries++
		}
	}
	// The sharer uploaded 3 chunks and the fetcher asked for 2, so the
	// compared prefix covers rounds in which they did something.
	if queries < 5 {
		t.Fatalf("only %d rounds compared (%d frames)", queries, k)
	}
	t.Logf("%d frames compared over %d rounds", k, queries)
}
