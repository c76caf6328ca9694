//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riffle-net/riffle/mix"
)

// soakHonest is how many honest clients TestSoakDisruptor runs.
const soakHonest = 3

// soakRun is what one run of TestSoakDisruptor measured.
type soakRun struct {
	bytes     int64 // fetched byte-exact by the honest clients
	ops       int
	secs      float64
	epochs    int // epochs an honest client took part in
	spoiled   int // epochs in which a server named a culprit
	culprits  int // distinct (epoch, slot) pairs named
	comebacks int // fresh identities the disruptor took
}

// perClient is the honest goodput in bytes per client per second.
func (r soakRun) perClient(honest int) float64 {
	return float64(r.bytes) / float64(soakHonest) / r.secs
}

// TestSoakDisruptor (RIFFLE_SOAK=1, `make soak`; RIFFLE_SOAK_MINUTES sets
// the length of each run, default 10) runs the same network twice, back to
// back: m = 3 servers and three honest clients that share and fetch files
// continuously, every byte checked, plus a fourth client. In the first run
// the fourth client is honest and idle; in the second it spoils round 1 of
// every epoch it gets a slot in (its onion fails its MAC at the middle
// layer), and each time a server names it, it comes back as a new client:
// a fresh data directory, so a fresh long-term key and peer id. Every
// culprit named must be the disruptor, and the honest goodput of the
// second run must be at least a floor of the first's (docs/anonymity.md
// "A disruptor that comes back").
func TestSoakDisruptor(t *testing.T) {
	if os.Getenv("RIFFLE_SOAK") == "" {
		t.Skip("set RIFFLE_SOAK=1 (make soak)")
	}
	minutes := 10
	if v, err := strconv.Atoi(os.Getenv("RIFFLE_SOAK_MINUTES")); err == nil && v > 0 {
		minutes = v
	}
	// floor is the least disturbed/undisturbed ratio of honest goodput.
	// A disruptor named in an epoch costs that epoch one void round, not
	// the epoch (its slot is dead for the rest of it, docs/protocol.md §8
	// "A dead slot"), so although it comes back at once under a fresh key
	// in every epoch, the honest clients keep at least half their goodput
	// (measured: about 1, docs/anonymity.md). The test checks too that
	// every culprit named is the disruptor and that no identity of it is
	// named in two epochs (its exclusion holds per key).
	const floor = 0.5
	length := time.Duration(minutes) * time.Minute
	var runs [2]soakRun
	for i, disrupt := range []bool{false, true} {
		t.Run(fmt.Sprintf("disruptor=%v", disrupt), func(t *testing.T) {
			runs[i] = soakDisruptorRun(t, length, disrupt)
			r := runs[i]
			t.Logf("%v: %d operations, %d bytes, %.0f B/s per honest client; %d epochs run, %d spoiled, %d culprits named, %d comebacks",
				length, r.ops, r.bytes, r.perClient(soakHonest), r.epochs, r.spoiled, r.culprits, r.comebacks)
		})
	}
	if t.Failed() {
		return
	}
	ratio := runs[1].perClient(soakHonest) / runs[0].perClient(soakHonest)
	t.Logf("honest goodput, disturbed/undisturbed: %.2f (floor %.2f)", ratio, floor)
	if ratio < floor {
		t.Fatalf("honest goodput with a returning disruptor is %.2f of the undisturbed run's, below %.2f", ratio, floor)
	}
	if runs[1].culprits == 0 || runs[1].comebacks == 0 {
		t.Fatal("the disruptor was never named")
	}
}

// soakDisruptorRun runs one network for length and returns its figures.
func soakDisruptorRun(t *testing.T, length time.Duration, disrupt bool) soakRun {
	p := testParams(6)
	p.RoundLimitMs = 60000
	bn := startBlameNetParams(t, p, 3, 3, 4, 3)
	var res soakRun
	type named struct {
		epoch [32]byte
		slot  int
	}
	var mu sync.Mutex
	fired := map[named]bool{}  // every slot the disruptor spoiled
	var current map[named]bool // the slots of the current identity
	var identities []map[named]bool
	disruptor := bn.clients[3]
	arm := func(c *Client) {
		mine := map[named]bool{}
		mu.Lock()
		current = mine
		identities = append(identities, mine)
		mu.Unlock()
		c.Hooks.Store(&ClientHooks{LayerKeys: func(epoch [32]byte, r, slot uint32, keys []mix.LayerKey) {
			if r != 1 {
				return
			}
			keys[1].MAC[0] ^= 1
			mu.Lock()
			fired[named{epoch, int(slot)}] = true
			mine[named{epoch, int(slot)}] = true
			mu.Unlock()
		}})
	}
	if disrupt {
		arm(disruptor)
	}
	ctx, cancel := context.WithTimeout(context.Background(), length)
	defer cancel()
	start := time.Now()
	epochs0 := bn.clients[0].Stats().Epochs

	// The watcher brings the disruptor back under a fresh identity as soon
	// as any server names its current one.
	var wg sync.WaitGroup
	if disrupt {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				time.Sleep(200 * time.Millisecond)
				hit := false
				for _, s := range bn.servers {
					rs, err := s.rb.Records()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, r := range rs {
						hit = hit || (r.Role == "client" && current[named{r.Epoch, r.Slot}])
					}
					mu.Unlock()
				}
				if !hit {
					continue
				}
				disruptor.Close()
				dir := filepath.Join(t.TempDir(), "disruptor")
				c, err := NewClient(context.Background(), ClientConfig{Network: testNet(t), Server: bn.servers[0].Addrs()[0].String(), DataDir: dir,
					Logger: rbLogger(), MinAnonymity: 1, Now: true})
				if err != nil {
					t.Error(err)
					return
				}
				arm(c)
				disruptor = c
				res.comebacks++
			}
			disruptor.Close()
		}()
	}

	var moved atomic.Int64
	var ops atomic.Int32
	for i := 0; i < soakHonest; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			up, down := bn.clients[i], bn.clients[(i+1)%soakHonest]
			dir := t.TempDir()
			for n := 0; ctx.Err() == nil; n++ {
				data := make([]byte, 8<<10+n*7919%(56<<10))
				rand.Read(data)
				link, err := up.Share(ctx, bytes.NewReader(data), fmt.Sprintf("c%d-%d.bin", i, n), false)
				if err == nil {
					var path string
					path, err = down.Get(ctx, link, dir)
					if err == nil {
						got, rerr := os.ReadFile(path)
						if rerr != nil || !bytes.Equal(got, data) {
							t.Errorf("client %d op %d: fetched bytes differ (%v)", i, n, rerr)
							return
						}
						os.Remove(path)
						moved.Add(int64(len(data)))
						ops.Add(1)
					}
				}
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("client %d op %d: %v", i, n, err)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	res.secs = time.Since(start).Seconds()
	res.bytes, res.ops = moved.Load(), int(ops.Load())
	res.epochs = bn.clients[0].Stats().Epochs - epochs0

	// Every culprit any server named is a slot the disruptor spoiled.
	spoiled := map[[32]byte]bool{}
	culprits := map[named]bool{}
	for k, s := range bn.servers {
		rs, err := s.rb.Records()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			mu.Lock()
			ok := r.Role == "client" && fired[named{r.Epoch, r.Slot}]
			mu.Unlock()
			if !ok {
				t.Errorf("server %d named %s %d/slot %d in epoch %x (%s): not the disruptor", k, r.Role, r.Server, r.Slot, r.Epoch[:4], r.Reason)
			}
			spoiled[r.Epoch] = true
			culprits[named{r.Epoch, r.Slot}] = true
		}
	}
	res.spoiled, res.culprits = len(spoiled), len(culprits)
	// Exclusion holds per key: no identity is named in two epochs.
	for k, mine := range identities {
		epochs := map[[32]byte]bool{}
		for n := range culprits {
			if mine[n] {
				epochs[n.epoch] = true
			}
		}
		if len(epochs) > 1 {
			t.Errorf("identity %d of the disruptor was named in %d epochs", k, len(epochs))
		}
	}
	if !disrupt && res.bytes == 0 {
		t.Error("the undisturbed run moved no bytes")
	}
	return res
}
