package node_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
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
// that idles send the same message types, each type in the same sequence
// of sizes (§1: sizes never depend on what a user does).
func TestWireSizesEqual(t *testing.T) {
	t.Parallel()
	node.Long(t) // sizes, not concurrency: the race pass took 49 s over what TestEndToEnd covers; the full pass runs it
	node.Virtual(t, func(t *testing.T) {
		const m, n = 3, 6
		p := node.TestParams(32)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		recs := make([]*recorder, n)
		for i := range recs {
			recs[i] = &recorder{}
		}
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: m, Clients: n, Params: p,
			Server: func(i int, c *node.ServerConfig) { c.Store = node.NewMemStore() },
			Client: func(i int, c *client.ClientConfig) { c.OnSend = func(t uint8, n int) { recs[i].add(wire.Type(t), n) } }})
		clients := tn.Clients
		data := nodetest.RandBytes(t, 40<<10)
		link, err := clients[0].Share(ctx, bytes.NewReader(data), "sizes.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := clients[1].Get(ctx, link, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		// Per message type, the sequence of sizes must be the same for all
		// three. (Across types, a client's frames interleave as its goroutines
		// are scheduled: round r's query goes out while it waits for round
		// r+1's list, in an order that depends on the machine, not the user.)
		byType := func(log []sent) map[wire.Type][]int {
			out := map[wire.Type][]int{}
			for _, x := range log {
				out[x.t] = append(out[x.t], x.size)
			}
			return out
		}
		sharer, fetcher, idle := byType(recs[0].snapshot()), byType(recs[1].snapshot()), byType(recs[2].snapshot())
		k := 0
		for ty := range idle {
			if len(sharer[ty]) == 0 || len(fetcher[ty]) == 0 {
				t.Fatalf("message type %d sent by the idle client only", ty)
			}
		}
		for ty, a := range sharer {
			b, c := fetcher[ty], idle[ty]
			if len(b) == 0 || len(c) == 0 {
				t.Fatalf("message type %d sent by the sharer only", ty)
			}
			l := min(len(a), len(b), len(c))
			for i := 0; i < l; i++ {
				if a[i] != b[i] || a[i] != c[i] {
					t.Fatalf("message %d of type %d differs: sharer %d bytes, fetcher %d, idle %d", i, ty, a[i], b[i], c[i])
				}
			}
			k += l
		}
		queries := min(len(sharer[wire.TypeQuery]), len(fetcher[wire.TypeQuery]), len(idle[wire.TypeQuery]))
		// The sharer uploaded 3 chunks and the fetcher asked for 2, so the
		// compared rounds include rounds in which they did something.
		if queries < 5 {
			t.Fatalf("only %d rounds compared (%d frames)", queries, k)
		}
		t.Logf("%d frames compared over %d rounds", k, queries)
	})
}
