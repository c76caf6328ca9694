//go:build riffletest

package node

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/store"
)

// TestSyncStallDelaysEverySlot (issue 26): a corrupt primary stalls its
// client's index sync at the epoch's start, which comes before the
// client's first onions, and a corrupt last server watches round 0. The
// stall does make the client's onions late (only the primary receives
// them, and it could hold them anyway), but no round is mixed before
// every live slot holds its onion, so round 0 starts late for every
// slot, and the last server's output holds a well-formed payload at
// every position: no dry or late output slot to tie to a pseudonym.
// Stalled past the round limit, the epoch ends with no round mixed.
// The end check of the epoch before, whose tail the next epoch's sync
// waits for, stalled the same way, delays that epoch alike.
func TestSyncStallDelaysEverySlot(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	t.Run("within the round limit", func(t *testing.T) {
		t.Parallel()
		testSyncStall(t, stallStart)
	})
	t.Run("the end check before", func(t *testing.T) {
		t.Parallel()
		testSyncStall(t, stallTail)
	})
	t.Run("past the round limit", func(t *testing.T) {
		t.Parallel()
		testSyncStall(t, stallPast)
	})
}

const (
	stallStart = iota // the epoch-start sync, within the round limit
	stallTail         // the epoch before's end check
	stallPast         // the epoch-start sync, past the round limit
)

func testSyncStall(t *testing.T, mode int) {
	virtual(t, func(t *testing.T) {
		p := testParams(6)
		p.RoundLimitMs = 10000
		stall := 5 * time.Second
		past := mode == stallPast
		if past {
			stall = 15 * time.Second
		}
		b, k := int(p.ChunkSize), int(p.K)
		var (
			mu      sync.Mutex
			target  peer.ID
			watch   [32]byte // the target's first epoch
			slot    uint32
			stallAt time.Time
			subAt   = map[uint32]time.Time{} // the target's submissions, by round
			mixAt   = map[int]time.Time{}    // each server's layer of round 0
			outs    = map[uint32]int{}       // the last server's well-formed payloads, by round
			sizes   = map[uint32]int{}       // and its output's size
			armed   atomic.Bool
			joined  = make(chan struct{})
			joins   int
		)
		tn := startAnonNet(t, 3, 0, 3, p, func(i int, c *ServerConfig) {
			c.observe = &testObserver{
				IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
					mu.Lock()
					hit := to == target && i == 0
					mu.Unlock()
					if hit && armed.CompareAndSwap(true, false) {
						mu.Lock()
						stallAt = time.Now()
						mu.Unlock()
						time.Sleep(stall)
					}
					return mans
				},
				Submit: func(epoch [32]byte, r, sl uint32, at time.Time) {
					mu.Lock()
					defer mu.Unlock()
					if epoch == watch && sl == slot && i == 0 {
						if _, ok := subAt[r]; !ok {
							subAt[r] = at
						}
					}
				},
				Stage: func(epoch [32]byte, r uint32, stage string) {
					mu.Lock()
					defer mu.Unlock()
					if epoch == watch && r == 0 && stage == "mix" {
						mixAt[i] = time.Now()
					}
				},
				LastOut: func(epoch [32]byte, r uint32, out [][]byte) {
					mu.Lock()
					defer mu.Unlock()
					if epoch != watch {
						return
					}
					sizes[r] = len(out)
					for _, raw := range out {
						if _, err := mix.DecodePayload(raw, b, k); err == nil {
							outs[r]++
						}
					}
				},
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var clients []*Client
		for i := range 3 {
			cfg := ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i].Addrs()[0].String(), Logger: anonLogger()}
			if i == 0 {
				cfg.ClientHookCfg = ClientHookCfg{Observe: &ClientObserver{Joined: func(epoch [32]byte, sl uint32, _ []byte) {
					mu.Lock()
					defer mu.Unlock()
					joins++
					if want := 1 + b2i(mode == stallTail); joins == want {
						// Before the epoch's sync (or in the tail mode,
						// once the first epoch's rounds are done, its end
						// check): the primary stalls it.
						watch, slot = epoch, sl
						armed.Store(mode != stallTail)
						close(joined)
					}
				}}}
			}
			c, err := NewClient(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			clients = append(clients, c)
			if i == 0 {
				mu.Lock()
				target = c.Inspect().PeerID()
				mu.Unlock()
			}
		}
		if mode == stallTail {
			// The first epoch's last query answered: its end check, 2 s
			// on, is the next index request.
			if err := wait.Until(ctx, 5*time.Minute, func() bool { return clients[0].Stats().Rounds >= int(p.Rounds) }); err != nil {
				t.Fatal("the client's first epoch did not run")
			}
			armed.Store(true)
		}
		select {
		case <-joined:
		case <-ctx.Done():
			t.Fatal("the client took no epoch")
		}
		if past {
			// The epoch ends unfilled; the client takes part in a later one.
			if err := wait.Until(ctx, 5*time.Minute, func() bool { return clients[0].Stats().Rounds > 0 }); err != nil {
				t.Fatal("the client ran no round after the stall")
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("stalled %v at %v; the target's first submission of the epoch %v later; layers of round 0 %d, last server's outputs %d", stall, stallAt.Format(time.StampMilli), subAt[0].Sub(stallAt), len(mixAt), len(sizes))
			if stallAt.IsZero() {
				t.Fatal("the stall never ran")
			}
			if len(mixAt) > 0 || len(sizes) > 0 {
				t.Fatalf("round 0 of the stalled epoch was mixed (%d layers, %d outputs) without the stalled client's onion", len(mixAt), len(sizes))
			}
			return
		}
		if err := wait.Until(ctx, 5*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, ok := sizes[1]
			return ok
		}); err != nil {
			t.Error("round 1 of the stalled epoch never reached the last server")
		}
		mu.Lock()
		defer mu.Unlock()
		if stallAt.IsZero() {
			t.Fatal("the stall never ran")
		}
		late := subAt[0].Sub(stallAt)
		t.Logf("stalled %v: the target's round-0 onion came %v after the stall began; layers of round 0 began %v after it (servers %v); the last server's well-formed payloads: round 0 %d of %d, round 1 %d of %d",
			stall, late, firstAfter(mixAt, stallAt), len(mixAt), outs[0], sizes[0], outs[1], sizes[1])
		if late < stall {
			t.Fatalf("the stalled client's round-0 onion came %v after the stall began, under the stall %v", late, stall)
		}
		for i, at := range mixAt {
			if at.Before(subAt[0]) {
				t.Errorf("server %d began its layer of round 0 %v before the stalled client's onion came", i, subAt[0].Sub(at))
			}
		}
		for r := range uint32(2) {
			if sizes[r] != 3 || outs[r] != 3 {
				t.Errorf("round %d: the last server's output holds %d well-formed payloads of %d, want 3 of 3", r, outs[r], sizes[r])
			}
		}
	})
}

// firstAfter is how long after t0 the earliest time of ts came.
func firstAfter(ts map[int]time.Time, t0 time.Time) time.Duration {
	var first time.Time
	for _, at := range ts {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first.Sub(t0)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
