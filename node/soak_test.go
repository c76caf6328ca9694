package node_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestSoak runs a network for minutes (RIFFLE_SOAK=1, `make soak`;
// RIFFLE_SOAK_MINUTES sets how many, default 10): a crowd that stays, and
// clients that join, share or get, and leave, across many short epochs.
// Every fetched file must equal the shared one, no operation may wait out
// a round limit (the limit is longer than an operation's deadline), and the
// servers' live heap must not grow with the rounds run (a leak of round
// state shows as a heap that keeps climbing).
func TestSoak(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		if os.Getenv("RIFFLE_SOAK") == "" {
			t.Skip("set RIFFLE_SOAK=1 (make soak)")
		}
		minutes := 10
		if v, err := strconv.Atoi(os.Getenv("RIFFLE_SOAK_MINUTES")); err == nil && v > 0 {
			minutes = v
		}
		p := node.TestParams(24)
		p.RoundLimitMs = 600000
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 4, Params: p})
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		end := time.Now().Add(time.Duration(minutes) * time.Minute)
		// The live heap without the servers' free recycled buffers (bounded by
		// transport.BufPool's poolMax each, and not a leak).
		heap := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			h := ms.HeapInuse
			for _, s := range tn.Servers {
				h -= min(h, uint64(s.PoolBytes()))
			}
			return h
		}
		var firstHalf, secondHalf uint64
		half := time.Now().Add(time.Duration(minutes) * time.Minute / 2)
		ops, moved := 0, 0
		for time.Now().Before(end) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			data := nodetest.RandBytes(t, rng.IntN(100<<10))
			name := fmt.Sprintf("soak%d.bin", ops)
			up, down := tn.Clients[rng.IntN(4)], tn.Clients[rng.IntN(4)]
			var closers []func() error
			if rng.IntN(2) == 0 {
				// Newcomers that leave when done, at random primaries.
				var err error
				if up, err = tn.NewClient(ctx, rng.IntN(3), client.ClientConfig{}); err != nil {
					t.Fatal(err)
				}
				if down, err = tn.NewClient(ctx, rng.IntN(3), client.ClientConfig{}); err != nil {
					t.Fatal(err)
				}
				closers = append(closers, up.Close, down.Close)
			}
			link, err := up.Share(ctx, bytes.NewReader(data), name, rng.IntN(3) == 0)
			if err != nil {
				t.Fatalf("op %d: share of %d bytes: %v", ops, len(data), err)
			}
			path, err := down.Get(ctx, link, t.TempDir())
			if err != nil {
				t.Fatalf("op %d: get of %d bytes: %v", ops, len(data), err)
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("op %d: fetched bytes differ (%v)", ops, err)
			}
			for _, c := range closers {
				c()
			}
			cancel()
			ops, moved = ops+1, moved+len(data)
			h := heap()
			if os.Getenv("RIFFLE_DEBUG") != "" {
				t.Logf("op %d: heap %d MiB", ops, h>>20)
			}
			if time.Now().Before(half) {
				firstHalf = max(firstHalf, h)
			} else {
				secondHalf = max(secondHalf, h)
			}
		}
		rounds := 0
		for _, s := range tn.Servers {
			rounds = max(rounds, s.Timing().Rounds)
		}
		t.Logf("%d operations, %d bytes shared and fetched, %d rounds, %d epochs seen by a staying client; heap in use at most %d MiB in the first half, %d MiB in the second",
			ops, moved, rounds, tn.Clients[0].Stats().Epochs, firstHalf>>20, secondHalf>>20)
		if secondHalf > firstHalf+firstHalf/2+16<<20 {
			t.Fatalf("heap grew from %d MiB to %d MiB over the run", firstHalf>>20, secondHalf>>20)
		}
	})
}
