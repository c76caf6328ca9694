//go:build riffletest

package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node/internal/chunks"
)

// TestRoundListPairsPublished (§6.3 and §7 v3): every round's signed
// request list carries its (output position, requested id) pairs, each
// server keeps them, and they are exactly the listed ids that each output
// position's published payload asked for: a get's requests appear as
// pairs.
func TestRoundListPairsPublished(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(4)
		type key struct {
			epoch [32]byte
			r     uint32
			q     int
		}
		var mu sync.Mutex
		asked := map[key]map[[32]byte]bool{}
		tn := startAnonNet(t, 2, 0, 2, p, func(i int, c *ServerConfig) {
			if i != 0 {
				return
			}
			c.observe = &testObserver{Requests: func(epoch [32]byte, r uint32, q int, ids [][32]byte) {
				mu.Lock()
				defer mu.Unlock()
				m := map[[32]byte]bool{}
				for _, id := range ids {
					if id != ([32]byte{}) {
						m[id] = true
					}
				}
				asked[key{epoch, r, q}] = m
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		up, down := tn.startPair(ctx, t, nil)
		link := shareConfirmed(ctx, t, up, anonRand(t, 2*int(p.ChunkSize)), "pairs.bin")
		if _, err := down.Get(ctx, link, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		found := 0
		for _, s := range tn.servers {
			bs, ok := s.store.(*chunks.BoltStore)
			if !ok {
				t.Fatal("no bolt store")
			}
			rounds := map[[36]byte]bool{}
			for k := range asked {
				rounds[chunks.RoundKey36(k.epoch, k.r)] = true
			}
			for rk := range rounds {
				var ep [32]byte
				copy(ep[:], rk[:32])
				r := uint32(rk[32])<<24 | uint32(rk[33])<<16 | uint32(rk[34])<<8 | uint32(rk[35])
				rec, err := bs.DB().Round(ep, r)
				if err != nil || len(rec.Requests) == 0 {
					continue // not listed (yet) here, or no requests
				}
				ps, err := bs.DB().Pairs(ep, r)
				if err != nil {
					t.Fatalf("round %d has a list of %d ids and no pairs: %v", r, len(rec.Requests), err)
				}
				listed := map[[32]byte]bool{}
				for _, q := range rec.Requests {
					listed[q.ID] = true
				}
				// Every pair is a listed id its position asked for, and every
				// listed id a position asked for is a pair.
				want := 0
				for k, ids := range asked {
					if k.epoch != ep || k.r != r {
						continue
					}
					for id := range ids {
						if listed[id] {
							want++
						}
					}
				}
				if len(ps) != want {
					t.Fatalf("round %d: %d pairs, want %d", r, len(ps), want)
				}
				for _, x := range ps {
					if !asked[key{ep, r, int(x.Pos)}][x.ID] || !listed[x.ID] {
						t.Fatalf("round %d: pair (%d, %x) was not asked for there or is not listed", r, x.Pos, x.ID[:4])
					}
				}
				found += len(ps)
			}
		}
		// The get asked for the file's two data chunks, at each server.
		if found < 2*len(tn.servers) {
			t.Fatalf("%d pairs over %d servers, want the get's at each", found, len(tn.servers))
		}
	})
}
