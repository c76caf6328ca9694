//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWaits measures, in virtual time on the in-memory network, how long
// a running client's share takes to its link and a link to a file fetched
// by another running client (issue 28 item 2; docs/operator.md, "How long
// a share and a get wait"). Three servers at the default parameters (R,
// k, W, the pace, the registration window) but the chunk size, which
// virtual time does not depend on: 16 KiB unless RIFFLE_WAITS_CHUNK says
// otherwise, and a file of 12 data chunks, 3 MB at the default 256 KiB.
// Every client runs as `riffle client` does, its presence wait drawn
// (§5.4), with --min-anonymity 2 (as scripts/waits.sh). Pairs of clients
// each share a file and fetch the other's: the first share is handed to
// the sharer when it starts (its presence wait included); once its link
// came the fetcher gets it, and the sharer shares a next file after a
// uniform offset within an epoch's length (a client past its presence
// wait), which the fetcher gets in turn, until each pair ran its jobs.
//
// RIFFLE_WAITS=16,64,200 runs one network of each size; RIFFLE_WAITS_PAIRS
// (default 4) sets the pairs, RIFFLE_WAITS_JOBS (default 3) the jobs of
// each; RIFFLE_WAITS_RUNS (default 1) repeats each network.
// `make waits` runs n = 16 and 64.
func TestWaits(t *testing.T) {
	spec := os.Getenv("RIFFLE_WAITS")
	if spec == "" {
		t.Skip("RIFFLE_WAITS=16,64,200 runs it (make waits)")
	}
	pairs, runs, chunk := envInt(t, "RIFFLE_WAITS_PAIRS", 4), envInt(t, "RIFFLE_WAITS_RUNS", 1), envInt(t, "RIFFLE_WAITS_CHUNK", 16<<10)
	jobs := envInt(t, "RIFFLE_WAITS_JOBS", 3)
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2*pairs {
			t.Fatalf("RIFFLE_WAITS=%q: want client counts of at least %d", spec, 2*pairs)
		}
		var all waitSamples
		cpu0 := cpuTime(t)
		for range runs {
			virtual(t, func(t *testing.T) { all.merge(measureWaits(t, n, pairs, jobs, uint32(chunk))) })
		}
		t.Logf("n = %d, %d pairs × %d runs, %d jobs a pair, b = %d, CPU %.0f s", n, pairs, runs, jobs, chunk, (cpuTime(t) - cpu0).Seconds())
		all.log(t, n)
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	x, err := strconv.Atoi(v)
	if err != nil || x <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return x
}

// waitSamples are the measured waits of each kind.
type waitSamples struct {
	mu                               sync.Mutex
	firstShare, firstGet, share, get []time.Duration
	epochs                           []time.Duration // epoch lengths seen
}

func (w *waitSamples) merge(o *waitSamples) {
	w.firstShare = append(w.firstShare, o.firstShare...)
	w.firstGet = append(w.firstGet, o.firstGet...)
	w.share = append(w.share, o.share...)
	w.get = append(w.get, o.get...)
	w.epochs = append(w.epochs, o.epochs...)
}

func (w *waitSamples) log(t *testing.T, n int) {
	t.Logf("| n | wait | trials | min | median | p90 | max |")
	for _, row := range []struct {
		name string
		d    []time.Duration
	}{
		{"first share → link (presence wait included)", w.firstShare},
		{"link → fetched, after a first share", w.firstGet},
		{"share → link, running client", w.share},
		{"link → fetched, running clients", w.get},
		{"epoch length", w.epochs},
	} {
		d := slices.Clone(row.d)
		slices.Sort(d)
		if len(d) == 0 {
			t.Logf("| %d | %s | 0 | | | | |", n, row.name)
			continue
		}
		q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
		t.Logf("| %d | %s | %d | %s | %s | %s | %s |", n, row.name, len(d), d[0].Round(time.Second), q(0.5).Round(time.Second),
			q(0.9).Round(time.Second), d[len(d)-1].Round(time.Second))
	}
}

func measureWaits(t *testing.T, n, pairs, jobs int, chunk uint32) *waitSamples {
	p := DefaultParams()
	p.ChunkSize = chunk
	tn := startAnonNet(t, 3, 0, 2, p, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
	defer cancel()
	var clients []*Client
	for i := range n {
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 2, Server: tn.servers[i%3].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	epochLen := time.Duration(p.RegWindowMs)*time.Millisecond + time.Duration(p.Rounds-1)*time.Duration(p.RoundIntervalMs)*time.Millisecond
	w := &waitSamples{}
	// Progress: epochs run and CPU spent, each epoch's length of virtual
	// time (n = 200 takes long).
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		cpu0 := cpuTime(t)
		for {
			select {
			case <-stop:
				return
			case <-time.After(epochLen):
			}
			t.Logf("n = %d: %d epochs, CPU %.0f s", n, clients[0].Stats().Epochs, (cpuTime(t) - cpu0).Seconds())
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs)
	for i := range pairs {
		up, down := clients[2*i], clients[2*i+1]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range jobs {
				if round > 0 {
					time.Sleep(time.Duration(randInt(int64(epochLen))))
				}
				data := make([]byte, 12*int(chunk)-1000)
				rand.Read(data)
				t0 := time.Now()
				link, err := up.Share(ctx, bytes.NewReader(data), fmt.Sprintf("f%d-%d", i, round), false)
				if err != nil {
					errs <- fmt.Errorf("share %d: %w", i, err)
					return
				}
				t1 := time.Now()
				path, err := down.Get(ctx, link, t.TempDir())
				if err != nil {
					errs <- fmt.Errorf("get %d: %w", i, err)
					return
				}
				t2 := time.Now()
				got, err := os.ReadFile(path)
				if err != nil || !bytes.Equal(got, data) {
					errs <- fmt.Errorf("get %d: the file differs (%v)", i, err)
					return
				}
				w.mu.Lock()
				if round == 0 {
					w.firstShare, w.firstGet = append(w.firstShare, t1.Sub(t0)), append(w.firstGet, t2.Sub(t1))
				} else {
					w.share, w.get = append(w.share, t1.Sub(t0)), append(w.get, t2.Sub(t1))
				}
				w.mu.Unlock()
				t.Logf("n = %d pair %d job %d: share → link %s, link → fetched %s", n, i, round, t1.Sub(t0).Round(time.Second), t2.Sub(t1).Round(time.Second))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := clients[0].Stats(); st.Epochs > 0 {
		w.epochs = append(w.epochs, clients[0].Inspect().EpochLen())
	}
	return w
}

func randInt(n int64) int64 {
	x, err := rand.Int(rand.Reader, big.NewInt(max(n, 1)))
	if err != nil {
		panic(err)
	}
	return x.Int64()
}
