//go:build riffletest

package node

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestRoundsPaced: in virtual time, each server of a small network starts
// its layer of consecutive rounds at least the group's round interval
// apart (the "mix" stage hook), so the rounds run no faster than the pace
// (§5, "The group pace"). Without the pace the rounds of this network
// follow one another at once.
func TestRoundsPaced(t *testing.T) {
	t.Run("honest", func(t *testing.T) { testRoundsPaced(t, false) })
	// Every server but one ignores the pace: the honest one's waits
	// still space its layers, and with them every server's rounds (each
	// needs the round two before it published, through every layer).
	t.Run("one honest server", func(t *testing.T) { testRoundsPaced(t, true) })
}

func testRoundsPaced(t *testing.T, fast bool) {
	virtual(t, func(t *testing.T) {
		const iv = 700 * time.Millisecond
		p := testParams(8)
		p.RoundIntervalMs = uint32(iv / time.Millisecond)
		var mu sync.Mutex
		type key struct {
			server int
			epoch  [32]byte
		}
		starts := map[key][]time.Time{}
		tn := startAnonNet(t, 3, 3, 3, p, func(i int, c *ServerConfig) {
			c.observe = &testObserver{Stage: func(epoch [32]byte, r uint32, stage string) {
				if stage != "mix" {
					return
				}
				mu.Lock()
				starts[key{i, epoch}] = append(starts[key{i, epoch}], time.Now())
				mu.Unlock()
			}}
		})
		if fast {
			for i, s := range tn.servers {
				if i != 1 {
					s.hooks.Store(&serverHooks{noPace: true})
				}
			}
		}
		if err := wait.UntilEvery(context.Background(), 5*time.Minute, 50*time.Millisecond, func() bool { return tn.clients[0].Stats().Rounds >= 6 }); err != nil {
			t.Fatal("rounds did not run")
		}
		mu.Lock()
		defer mu.Unlock()
		gaps := 0
		for k, ts := range starts {
			sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
			if fast && k.server != 1 {
				// Up to mixDepth rounds ahead of the honest server.
				for i := mixDepth + 1; i < len(ts); i++ {
					if d := ts[i].Sub(ts[i-mixDepth-1]); d < iv {
						t.Errorf("server %d, epoch %x: layers %d and %d started %v apart, under the interval %v", k.server, k.epoch[:4], i-mixDepth-1, i, d, iv)
					}
					gaps++
				}
				continue
			}
			for i := 1; i < len(ts); i++ {
				if d := ts[i].Sub(ts[i-1]); d < iv {
					t.Errorf("server %d, epoch %x: layers %d and %d started %v apart, under the interval %v", k.server, k.epoch[:4], i-1, i, d, iv)
				}
				gaps++
			}
		}
		if want := 3 * 5; fast && gaps < want-2*mixDepth || !fast && gaps < want {
			t.Fatalf("only %d gaps between mix steps seen", gaps)
		}
	})
}

// TestSlowPaceKeepsEpoch: at a group pace above T_lead, the quiet between
// two rounds is no stall. Each epoch runs all its rounds; before, the next
// number's leader took an epoch quiet for T_lead as one whose end it
// missed, prepared, and ended every epoch after its first round.
func TestSlowPaceKeepsEpoch(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		const R = 4
		p := testParams(R)
		p.RoundIntervalMs = uint32(DefaultLeaderTimeout/time.Millisecond) * 3 / 2
		var mu sync.Mutex
		mixed := map[[32]byte]int{}
		startAnonNet(t, 3, 3, 3, p, func(i int, c *ServerConfig) {
			if i != 0 {
				return
			}
			c.observe = &testObserver{Stage: func(epoch [32]byte, r uint32, stage string) {
				if stage == "mix" {
					mu.Lock()
					mixed[epoch]++
					mu.Unlock()
				}
			}}
		})
		if err := wait.Until(context.Background(), 20*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, n := range mixed {
				if n >= R {
					return true
				}
			}
			return false
		}); err != nil {
			mu.Lock()
			defer mu.Unlock()
			var counts []int
			for _, n := range mixed {
				counts = append(counts, n)
			}
			t.Fatalf("no epoch ran its %d rounds at a pace of %d ms (rounds mixed by server 0, per epoch: %v)", R, p.RoundIntervalMs, counts)
		}
	})
}
