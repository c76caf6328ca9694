//go:build riffletest

package node

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// keptOutRun plays the kept-out adversary (issue 26): a corrupt primary
// (server 0; server 2 is honest) refuses its client's registration for one
// epoch N, leaving it out of its order, then watches the victim in the
// next three epochs it takes part in, and keeps it out again after those,
// and so on. A client whose pool followed the epochs it attended (own
// true: OwnDecoys, the positive control, switched on in the test only)
// lacks N's lists, where every other client's pool holds them. The
// adversary scores each pseudonym of those epochs by its requests for N's
// own ids (first asked for in N, not in the six epochs before: three
// sharers of 64-chunk files and their fetchers give each epoch ids of its
// own) and guesses the lowest, n = 8 choices, ties at random. Under the
// group's window N enters every client's window at N + 2 alike. keepOuts
// is how many epochs the victim is kept out of; trials are the victim's
// epochs after each (variance bound Σ p, as in TestAdversaryLinks).
// R = 256, k = 1.
func keptOutRun(t *testing.T, own bool, keepOuts int) *tally {
	const m, n, victim = 3, 8, 0 // client 0's primary is server 0
	rec := newAdvRecord()
	p := advParams(256)
	p.K, p.ChunkSize = 1, 1<<10
	var (
		vmu      sync.Mutex
		vpeer    peer.ID
		joins    int                   // the victim's epochs so far
		since    int                   // and since it was last kept out
		keptOut  = map[[32]byte]bool{} // the epochs it was kept out of
		outOrder [][32]byte            // in the order kept out
	)
	// At least 4 clients an epoch: an epoch runs without the victim.
	tn := startAnonNet(t, m, 0, 4, p, func(i int, c *ServerConfig) {
		o := rec.server(i)
		if i == victim%m {
			o.KeepOut = func(from peer.ID, epoch [32]byte) bool {
				vmu.Lock()
				defer vmu.Unlock()
				if from != vpeer {
					return false
				}
				if keptOut[epoch] {
					return true // its retries in the same epoch
				}
				// Once its pool is full (DecoyEpochs + 2 epochs), and
				// three epochs after the last time.
				if joins < DecoyEpochs+2 || since < 3 || len(outOrder) >= keepOuts {
					return false
				}
				keptOut[epoch], since = true, 0
				outOrder = append(outOrder, epoch)
				return true
			}
		}
		c.observe = o
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(4*keepOuts+DecoyEpochs+10)*10*time.Minute)
	defer cancel()
	var order [][32]byte // the epochs in the order they ran (rec.mu)
	var clients []*Client
	for i := range n {
		o := rec.client(i)
		o.OwnDecoys = own
		joined := o.Joined
		o.Joined = func(epoch [32]byte, slot uint32, ps []byte) {
			joined(epoch, slot, ps)
			if i == victim {
				vmu.Lock()
				joins++
				since++
				vmu.Unlock()
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if !slices.Contains(order, epoch) {
				order = append(order, epoch)
			}
		}
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i == victim {
			vmu.Lock()
			vpeer = c.Inspect().PeerID()
			vmu.Unlock()
		}
		clients = append(clients, c)
	}
	// Fresh demand all along: new files shared and fetched again and
	// again, so that each epoch's lists hold ids of their own, three
	// sharers (the index takes a few manifests a publisher an epoch) each
	// with its fetcher. The victim is idle: every request it sends is a
	// decoy.
	demand, stopDemand := context.WithCancel(ctx)
	var dwg sync.WaitGroup
	for j := range 3 {
		dwg.Add(1)
		go func() {
			defer dwg.Done()
			for k := 0; demand.Err() == nil; k++ {
				l, err := clients[2+j].Share(demand, bytes.NewReader(anonRand(t, 64*int(p.ChunkSize))), fmt.Sprintf("d%d-%d.bin", j, k), false)
				if err != nil {
					return
				}
				clients[5+j].Get(demand, l, t.TempDir())
			}
		}()
	}
	// Done once the victim took part in three epochs after its last
	// keep-out, each ended.
	after := func(x int) [][32]byte { // the victim's epochs after order[x], up to three
		var out [][32]byte
		for _, e := range order[x+1:] {
			if _, ok := rec.joined[e][victim]; ok && len(out) < 3 {
				out = append(out, e)
			}
		}
		return out
	}
	asked := func(e [32]byte) map[[32]byte]bool {
		out := map[[32]byte]bool{}
		for _, k := range rec.byEpoch[e] {
			for _, x := range rec.reqs[k] {
				if x != ([32]byte{}) {
					out[x] = true
				}
			}
		}
		return out
	}
	// fresh: the ids first asked for in epoch g (not in the six before),
	// its own demand.
	fresh := func(g [32]byte) map[[32]byte]bool {
		out := asked(g)
		x := slices.Index(order, g)
		for _, e := range order[max(0, x-6):x] {
			for id := range asked(e) {
				delete(out, id)
			}
		}
		return out
	}
	// score plays the adversary on the keep-outs outs whose three epochs
	// after ended (under rec.mu): at the end, and in full runs every 10
	// trials, so that a stopped run still gives figures.
	score := func(outs [][32]byte, final bool) *tally {
		rng := rand.New(rand.NewPCG(26, 4))
		tl := &tally{}
		for _, N := range outs {
			x := slices.Index(order, N)
			if x < 0 {
				continue
			}
			if _, ok := rec.joined[N][victim]; ok {
				t.Fatalf("the victim took part in an epoch its primary kept it out of")
			}
			freshN := fresh(N)
			for _, e := range after(x) {
				ps := rec.pseud[e]
				if ps == nil || !rec.ended(e, p.Rounds) {
					continue
				}
				truth := -1
				for q, pq := range ps {
					if bytes.Equal(pq, rec.joined[e][victim].p) {
						truth = q
					}
				}
				// Requests for the missed epoch's own ids count.
				weight := map[[32]byte]int{}
				for id := range freshN {
					weight[id] = 1
				}
				score := make([]int, len(ps))
				for _, k := range rec.byEpoch[e] {
					if k.q >= len(ps) {
						continue
					}
					for _, id := range rec.reqs[k] {
						score[k.q] += weight[id]
					}
				}
				var fit []int
				low := 0
				for q, s := range score {
					switch {
					case q == 0 || s < low:
						fit, low = []int{q}, s
					case s == low:
						fit = append(fit, q)
					}
				}
				pn := 1 / float64(len(ps))
				tl.add(fit[rng.IntN(len(fit))] == truth, pn, pn)
				if final && testing.Verbose() {
					t.Logf("own %v: %d ids weighed; score by position %v, the victim at %d", own, len(weight), score, truth)
				}
			}
		}
		return tl
	}
	logged, lastDone := 0, 0
	waitCount(ctx, t, "epochs kept out and watched", keepOuts, func() int {
		vmu.Lock()
		outs := slices.Clone(outOrder)
		vmu.Unlock()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var done [][32]byte
		for _, N := range outs {
			x := slices.Index(order, N)
			if x < 0 {
				continue
			}
			es := after(x)
			if len(es) == 3 && rec.pseud[es[2]] != nil && rec.ended(es[2], p.Rounds) {
				done = append(done, N)
			}
		}
		if advFull() && len(done) > lastDone && len(done) < keepOuts {
			lastDone = len(done)
			if tl := score(done, false); tl.trials/10 > logged/10 {
				logged = tl.trials
				t.Logf("kept out (own lists %v), %d keep-outs of %d so far, %v of CPU: %s", own, len(done), keepOuts, cpuTime(t).Round(time.Second), tl)
			}
		}
		return len(done)
	})
	stopDemand()
	dwg.Wait()
	for _, c := range clients {
		c.Close()
	}
	vmu.Lock()
	outs := slices.Clone(outOrder)
	vmu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	tl := score(outs, true)
	if advFull() {
		t.Logf("kept out (own lists %v): %s, %v of CPU", own, tl, cpuTime(t).Round(time.Second))
	}
	return tl
}

// TestAdversaryKeptOut (issue 26, §6.3 v3): a client that its corrupt
// primary kept out of one epoch draws its decoys, in the epochs after,
// from the group's window like every other client, so the adversary that
// looks for the pseudonym lacking the missed epoch's ids links it at
// chance; with the old rule (own lists, the positive control) it is
// marked for the next three epochs. R = 256, k = 1. Only with
// RIFFLE_ADVERSARY=1 (6 keep-outs an arm, 18 trials), RIFFLE_LONG=1 (20)
// or RIFFLE_ADVERSARY_FULL=1 (67 keep-outs, 201 trials).
func TestAdversaryKeptOut(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		keepOuts := adversaryTrials(t, 6, 20, 67)
		def := keptOutRun(t, false, keepOuts)
		ctl := keptOutRun(t, true, keepOuts)
		t.Logf("kept out, R = 256, k = 1, n = 8: group window %s; own lists (control) %s", def, ctl)
		checkLinks(t, "kept-out clients", def, ctl)
	})
}
