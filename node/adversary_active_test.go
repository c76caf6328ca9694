package node

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// The active linking adversary (docs/anonymity.md, "How it is tested"):
// corrupt servers that do more than watch. Each strategy runs real epochs
// with m = 3 servers and n = 8 clients; the corrupt servers' behaviour is
// replaced through the observer hooks (observe.go), and the clients record
// the ground truth, which the adversary never gets.

// spoiledTrial is one guess of the spoiled-answers adversary.
type spoiledTrial struct {
	control bool
	win     bool
}

// TestAdversarySpoiledAnswers (§6.3): the victims' primaries, two corrupt
// servers of three, spoil every PIR answer of one victim in one round r
// of each epoch (each victim its own round, so that the adversary can
// tell the victims apart). The adversary then guesses the victim's
// pseudonym in the next epoch as the one whose published requests hold
// the most ids of round r's published requests (ties at random): a client
// that asked again for what it did not get would be that pseudonym. A
// trial is one victim in one epoch in which the victim's jobs did request
// chunks in its round (the truth, from the client), n = 8 choices.
//
// Victims 0 and 1 follow §6.3 (a spoiled chunk is never asked for on
// purpose again); victims 3 and 4, the positive control, ask for it again
// in the next epoch (testClientObserver.RetryCorrupted, switched on in the
// test only). The strategy reads only the public request lists and what
// the victims' primaries know (their clients' slots), so where the honest
// server (here server 2, no victim's primary) sits in the chain does not
// matter to it.
//
// Independence: trials of one epoch pair share the decoys of the other
// clients; as in TestAdversaryLinks the variance bound is Σ p, not
// Σ p(1−p).
func TestAdversarySpoiledAnswers(t *testing.T) {
	const m, n = 3, 8
	// Trials of each kind; the control links nearly every trial, so
	// that even 5 clear the bound (4 of 5 at chance 1/8).
	target := 8
	switch {
	case os.Getenv("RIFFLE_LONG") != "":
		target = 100
	case testing.Short():
		target = 5
	}
	p := testParams(4)
	// victim client → the round whose answers its primary spoils; small
	// files (4 data chunks: rounds 0 and 1) for the §6.3 victims, large
	// ones (8: every round) for the control's, which fetch every other
	// epoch so that their repeats fit in the next epoch.
	round := map[int]uint32{0: 0, 1: 1, 3: 2, 4: 3}
	control := map[int]bool{3: true, 4: true}
	rec := newAdvRecord()
	var (
		mu      sync.Mutex
		order   [][32]byte                              // epochs in the order first joined
		realReq = map[[32]byte]map[int]map[uint32]int{} // epoch → client → round → real ids
	)
	tn := startAnonNet(t, m, 0, 0, p, func(i int, c *ServerConfig) {
		o := rec.server(i)
		if i < 2 { // servers 0 and 1 are corrupt and active
			o.Corrupt = func(epoch [32]byte, r, slot uint32, _ int) bool {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				for v, rv := range round {
					if v%m != i || rv != r {
						continue
					}
					if j, ok := rec.joined[epoch][v]; ok && j.slot == slot {
						return true
					}
				}
				return false
			}
		}
		c.observe = o
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	type file struct {
		owner int
		link  chunker.Link
	}
	small, large := make(chan file, 256), make(chan file, 256)
	joinedCh := make([]chan struct{}, n)
	var clients []*Client
	for i := 0; i < n; i++ {
		joinedCh[i] = make(chan struct{}, 4)
		o := rec.client(i)
		joined := o.Joined
		o.Joined = func(epoch [32]byte, slot uint32, ps []byte) {
			joined(epoch, slot, ps)
			mu.Lock()
			seen := false
			for _, e := range order {
				seen = seen || e == epoch
			}
			if !seen {
				order = append(order, epoch)
			}
			mu.Unlock()
			select {
			case joinedCh[i] <- struct{}{}:
			default:
			}
		}
		o.Requested = func(epoch [32]byte, r uint32, ids [][32]byte) {
			mu.Lock()
			defer mu.Unlock()
			if realReq[epoch] == nil {
				realReq[epoch] = map[int]map[uint32]int{}
			}
			if realReq[epoch][i] == nil {
				realReq[epoch][i] = map[uint32]int{}
			}
			realReq[epoch][i][r] += len(ids)
		}
		o.RetryCorrupted = control[i]
		c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), observe: o, jobEpochs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	// Uploaders: the victims share small files, the others large ones,
	// all the time.
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunks, out := 8, large
			if _, ok := round[i]; ok {
				chunks, out = 4, small
			}
			for k := 0; runCtx.Err() == nil; k++ {
				link, err := clients[i].Share(runCtx, bytes.NewReader(anonRand(t, chunks*int(p.ChunkSize)-300)), fmt.Sprintf("c%d-%d.bin", i, k), false)
				if err != nil {
					return
				}
				out <- file{i, link}
			}
		}()
	}
	// Victims start a get as they join an epoch (every epoch, every
	// other epoch for the control's), from files shared before.
	for v := range round {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := small
			if control[v] {
				src = large
			}
			skip := false
			for {
				select {
				case <-runCtx.Done():
					return
				case <-joinedCh[v]:
				}
				if skip {
					skip = false
					continue
				}
				select {
				case f := <-src:
					if f.owner == v {
						src <- f // another victim's
						continue
					}
					skip = control[v]
					dir := t.TempDir()
					wg.Add(1)
					go func() {
						defer wg.Done()
						clients[v].Get(runCtx, f.link, dir) // spoiled gets never end
					}()
				default:
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(5, 6))
	play := func() (null, ctl *tally) {
		null, ctl = &tally{}, &tally{}
		mu.Lock()
		defer mu.Unlock()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		before := map[[32]byte]int{} // epoch → its index in order
		for x, e := range order {
			before[e] = x
		}
		for x := 0; x+1 < len(order); x++ {
			e, e1 := order[x], order[x+1]
			if len(rec.joined[e]) != n || len(rec.joined[e1]) != n || rec.pseud[e1] == nil || !rec.ended(e, p.Rounds) || !rec.ended(e1, p.Rounds) {
				continue
			}
			for v, r := range round {
				if realReq[e][v][r] == 0 {
					continue
				}
				// What round r of epoch e asked for, in public, for the
				// first time: a decoy is drawn from ids asked for
				// before, a fetch's first request is not.
				asked := map[[32]byte]bool{}
				for q := 0; q < n; q++ {
					for _, id := range rec.reqs[reqKey{e, r, q}] {
						asked[id] = true
					}
				}
				for k, ids := range rec.reqs {
					if before[k.epoch] < x || (k.epoch == e && k.r < r) {
						for _, id := range ids {
							delete(asked, id)
						}
					}
				}
				score := make([]int, n)
				for rr := uint32(0); rr < p.Rounds; rr++ {
					for q := 0; q < n; q++ {
						for _, id := range rec.reqs[reqKey{e1, rr, q}] {
							if asked[id] {
								score[q]++
							}
						}
					}
				}
				best, top := []int{}, -1
				for q, s := range score {
					switch {
					case s > top:
						best, top = []int{q}, s
					case s == top:
						best = append(best, q)
					}
				}
				truth := -1
				for q, pq := range rec.pseud[e1] {
					if bytes.Equal(pq, rec.joined[e1][v].p) {
						truth = q
					}
				}
				tl := null
				if control[v] {
					tl = ctl
				}
				pn := 1 / float64(n)
				tl.add(best[rng.IntN(len(best))] == truth, pn, pn)
			}
		}
		return null, ctl
	}
	var null, ctl *tally
	for {
		null, ctl = play()
		if null.trials >= target && ctl.trials >= target {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("only %d and %d trials", null.trials, ctl.trials)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	mu.Lock()
	epochs := len(order)
	mu.Unlock()
	t.Logf("spoiled answers, m = %d, n = %d, %d epochs: §6.3 victims %s; victims that ask again (control) %s", m, n, epochs, null, ctl)
	if float64(null.wins) > null.bound() {
		t.Errorf("the adversary links a spoiled client to its next pseudonym above chance: %s", null)
	}
	if float64(ctl.wins) <= ctl.bound() {
		t.Errorf("control: repeats of spoiled chunks are not exploited: %s; the adversary is broken", ctl)
	}
}
