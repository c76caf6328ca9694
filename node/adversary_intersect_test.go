//go:build riffletest

package node

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// intersectGuess is the intersection adversary's guess (docs/anonymity.md,
// "How it is tested"): what a global observer, or the servers, see of who
// is online, set against the public request lists. member[x] is the set of
// clients present in the x-th epoch (in time order), firstJoin the epoch
// in which each client first appeared, req the epochs (indices, any order)
// whose published request lists asked for one of the file's chunks.
//
// The first request for a file's chunks is its fetcher's (a decoy draws
// only from the lists of epochs with a closing record, which comes two
// epochs later at the earliest, §6.3), and so is every request of the
// epoch after: the fetcher was present in both. The candidates are the
// clients present in every such epoch; among them the adversary takes
// those that arrived last (a client that came for the job arrived just
// before it). It returns them, and the chance baseline: how many clients
// were present when the fetch began.
func intersectGuess(member []map[int]bool, firstJoin map[int]int, req []int) (best []int, present int) {
	if len(req) == 0 {
		return nil, 0
	}
	x0 := req[0]
	for _, x := range req {
		x0 = min(x0, x)
	}
	var span []int
	for _, x := range req {
		if x <= x0+1 {
			span = append(span, x)
		}
	}
	last := -1
	for c := range member[x0] {
		in := true
		for _, x := range span {
			in = in && member[x][c]
		}
		if !in {
			continue
		}
		switch f := firstJoin[c]; {
		case f > last:
			best, last = []int{c}, f
		case f == last:
			best = append(best, c)
		}
	}
	sort.Ints(best)
	return best, len(member[x0])
}

// TestIntersectGuess pins the adversary's rule on hand-made memberships.
func TestIntersectGuess(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		stay := func(extra ...int) map[int]bool {
			m := map[int]bool{0: true, 1: true, 2: true}
			for _, c := range extra {
				m[c] = true
			}
			return m
		}
		// Clients 0–2 stay throughout; 7 comes in epoch 2 for a job and
		// leaves after epoch 3; 8 comes in epoch 3 and stays.
		member := []map[int]bool{stay(), stay(), stay(7), stay(7, 8), stay(8), stay(8)}
		first := map[int]int{0: 0, 1: 0, 2: 0, 7: 2, 8: 3}
		for _, tc := range []struct {
			name    string
			req     []int
			best    []int
			present int
		}{
			{"one-shot fetcher", []int{2, 3}, []int{7}, 4},
			{"decoys later do not widen the span", []int{5, 2, 3}, []int{7}, 4},
			{"a fetch in the newcomer's first epoch", []int{3, 4}, []int{8}, 5},
			{"long-running clients tie", []int{0, 1}, []int{0, 1, 2}, 3},
			{"nobody asked", nil, nil, 0},
		} {
			best, present := intersectGuess(member, first, tc.req)
			if fmt.Sprint(best) != fmt.Sprint(tc.best) || present != tc.present {
				t.Errorf("%s: candidates %v of %d present, want %v of %d", tc.name, best, present, tc.best, tc.present)
			}
		}
	})
}

// intersectRun plays the intersection adversary over real epochs forced
// short (R = 2, what ending epochs early does to a get: it spans more of
// them) with m = 3 servers and six clients that stay throughout, two of
// which share files one after another. Clients keep arriving, one an
// epoch, and stay; each new one fetches one file (not its own) as soon as
// it is handed the job: with now false, its jobs start only after its
// presence wait (§5.4), so that later arrivals are online when its fetch
// begins; with now true, the positive control, at once, as `get --now`
// does (there a client that then stays). The adversary guesses the
// fetcher by intersectGuess, at random among its candidates. A stream
// that stopped (no later arrival during the wait) would let it link the
// defended arm too: the arm can fail. It also returns, as a figure only,
// a sharper guess against the wait: among the clients present in the
// fetch's epochs, one that arrived exactly two epochs before it began
// (the wait's most likely length).
func intersectRun(t *testing.T, now bool, trials int) (*tally, *tally) {
	const m, stay = 3, 6
	p := advParams(2)
	p.K = 1 // a get of a few chunks spans two epochs or more (R = 2)
	rec := newAdvRecord()
	tn := startAnonNet(t, m, 0, stay, p, func(i int, c *ServerConfig) { c.observe = rec.server(i) })
	ctx, cancel := context.WithTimeout(context.Background(), advTimeout(20*time.Minute))
	defer cancel()
	var (
		mu        sync.Mutex
		order     [][32]byte // epochs in the order first joined
		member    []map[int]bool
		firstJoin = map[int]int{}
	)
	newClient := func(idx int, now bool) *Client {
		o := rec.client(idx)
		joined := o.Joined
		o.Joined = func(epoch [32]byte, slot uint32, ps []byte) {
			joined(epoch, slot, ps)
			mu.Lock()
			defer mu.Unlock()
			x := -1
			for k, e := range order {
				if e == epoch {
					x = k
				}
			}
			if x < 0 {
				order, member = append(order, epoch), append(member, map[int]bool{})
				x = len(order) - 1
			}
			if _, ok := firstJoin[idx]; !ok {
				firstJoin[idx] = x
			}
			member[x][idx] = true
		}
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: now, Server: tn.servers[idx%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o, JobEpochs: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	epochs := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(order)
	}
	var clients []*Client
	for i := 0; i < stay; i++ {
		c := newClient(i, true)
		defer c.Close()
		clients = append(clients, c)
	}
	type file struct {
		link chunker.Link
		ids  map[[32]byte]bool
	}
	files := make(chan file, 64)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for u := 0; u < 2; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; runCtx.Err() == nil; k++ {
				h, err := clients[u].StartShare(runCtx, bytes.NewReader(anonRand(t, 3*int(p.ChunkSize)-300)), fmt.Sprintf("u%d-%d.bin", u, k), false)
				if err != nil {
					return
				}
				select {
				case <-h.Done():
				case <-runCtx.Done():
					return
				}
				if _, _, _, err := h.Result(); err != nil {
					return
				}
				ids := map[[32]byte]bool{}
				for _, id := range h.IDs {
					ids[id] = true
				}
				select {
				case files <- file{h.Link, ids}:
				case <-runCtx.Done():
					return
				}
			}
		}()
	}
	type trial struct {
		fetcher int
		ids     map[[32]byte]bool
	}
	type arrival struct {
		c       *Client
		fetched chan struct{}
	}
	var active []arrival
	var (
		done  []trial
		gets  sync.WaitGroup
		getMu sync.Mutex
		fails []error
	)
	// One arrival an epoch: each new client comes once the epochs have
	// moved on since the last one came, and stays to the end.
	for j := 0; j < trials; j++ {
		waitCount(ctx, t, "epochs before the next arrival", epochs()+1, epochs)
		var f file
		select {
		case f = <-files:
		case <-ctx.Done():
			t.Fatalf("%d trials of %d: no file shared in time", j, trials)
		}
		v := stay + j
		c := newClient(v, now)
		defer c.Close()
		done = append(done, trial{v, f.ids})
		gets.Add(1)
		fetched := make(chan struct{})
		go func() {
			defer gets.Done()
			defer close(fetched)
			if _, err := c.Get(ctx, f.link, t.TempDir()); err != nil {
				getMu.Lock()
				fails = append(fails, fmt.Errorf("trial %d: get: %w", j, err))
				getMu.Unlock()
			}
		}()
		// The epochs hold MinClientCap clients: past 40 arrivals the
		// oldest leaves, once its get is done (runs of 200 trials).
		active = append(active, arrival{c, fetched})
		if len(active) > 40 {
			<-active[0].fetched
			active[0].c.Close()
			active = active[1:]
		}
		if advFull() && j%10 == 9 {
			t.Logf("%d arrivals of %d", j+1, trials)
		}
	}
	gets.Wait()
	if len(fails) > 0 {
		t.Fatal(fails[0])
	}
	// Let the last fetch's epochs publish all their lists.
	waitCount(ctx, t, "epochs after the last get", epochs()+2, epochs)
	stop()
	mu.Lock()
	defer mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	index := map[[32]byte]int{}
	for x, e := range order {
		index[e] = x
	}
	askedIn := map[[32]byte]map[int]bool{} // id → epochs (indices) that asked for it
	for k, ids := range rec.reqs {
		x, ok := index[k.epoch]
		if !ok {
			continue
		}
		for _, id := range ids {
			if askedIn[id] == nil {
				askedIn[id] = map[int]bool{}
			}
			askedIn[id][x] = true
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	tl, age := &tally{}, &tally{}
	for j, tr := range done {
		reqSet := map[int]bool{}
		x0 := -1
		for id := range tr.ids {
			for x := range askedIn[id] {
				reqSet[x] = true
				if x0 < 0 || x < x0 {
					x0 = x
				}
			}
		}
		var req []int
		for x := range reqSet {
			req = append(req, x)
		}
		best, present := intersectGuess(member, firstJoin, req)
		if present == 0 {
			t.Fatalf("trial %d: no published request for the fetched file", j)
		}
		pn := 1 / float64(present)
		tl.add(best[rng.IntN(len(best))] == tr.fetcher, pn, pn*(1-pn))
		var aged []int
		for c := range member[x0] {
			if firstJoin[c] == x0-2 {
				aged = append(aged, c)
			}
		}
		sort.Ints(aged)
		age.add(len(aged) > 0 && aged[rng.IntN(len(aged))] == tr.fetcher, pn, pn*(1-pn))
	}
	return tl, age
}

// TestAdversaryIntersect (§5.4 v3): clients keep arriving, one an epoch,
// each fetching a file as soon as it is handed the job. With the presence
// wait the intersection adversary (present in all the fetch's epochs,
// arrived last) links the fetcher no better than chance: later arrivals
// are online when the fetch begins. Without it (Now, the positive
// control) the fetcher is the one that arrived last, in nearly every
// trial. Trials are independent coins (variance p(1−p)). It runs two
// networks for some minutes, so only with RIFFLE_ADVERSARY=1 (8 trials of
// each kind) or RIFFLE_LONG=1 (24); RIFFLE_ADVERSARY_FULL=1 plays 200 at
// the default R = 256, where a get fits in one epoch. The sharper guess by
// the wait's most likely length is logged, not asserted (docs/anonymity.md,
// "How it is tested").
func TestAdversaryIntersect(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		trials := adversaryTrials(t, 8, 24, 200)
		wait, waitAge := intersectRun(t, false, trials)
		t.Logf("with the presence wait (the first arm): %s; by arrival two epochs before %s", wait, waitAge)
		ctl, ctlAge := intersectRun(t, true, trials)
		t.Logf("intersection, R = %d, m = 3, one arrival an epoch: with the presence wait %s; without (control) %s", advParams(2).Rounds, wait, ctl)
		t.Logf("the same by arrival two epochs before the fetch: with the wait %s; without %s", waitAge, ctlAge)
		checkLinks(t, "fetchers by their presence", wait, ctl)
	})
}
