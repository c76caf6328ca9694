//go:build riffletest

package node

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/mix"
)

// leavingRecord is what the last server of the leaving adversary reads:
// of the watched epoch, every output position's plaintext a round
// (whether it carries a chunk, and its requests), and of every epoch the
// ids asked for, so that it knows which were first asked for too lately
// to be anyone's decoys.
type leavingRecord struct {
	mu    sync.Mutex
	watch [32]byte
	out   map[uint32][]leavingOut // round → output position
	ord   map[[32]byte]int        // epoch → its order of first output
	asked map[[32]byte]int        // id → the epoch (ord) it was first asked for in
}

type leavingOut struct {
	chunk bool
	reqs  [][32]byte
}

func (l *leavingRecord) observe(b, k int) func(epoch [32]byte, r uint32, out [][]byte) {
	return func(epoch [32]byte, r uint32, out [][]byte) {
		l.mu.Lock()
		defer l.mu.Unlock()
		o, ok := l.ord[epoch]
		if !ok {
			o = len(l.ord)
			l.ord[epoch] = o
		}
		row := make([]leavingOut, len(out))
		for q, raw := range out {
			p, err := mix.DecodePayload(raw, b, k)
			if err != nil {
				continue
			}
			row[q].chunk = p.Kind == mix.KindChunk
			for _, id := range p.Requests {
				if id == ([32]byte{}) {
					continue
				}
				row[q].reqs = append(row[q].reqs, id)
				if _, ok := l.asked[id]; !ok {
					l.asked[id] = o
				}
			}
		}
		if epoch == l.watch {
			l.out[r] = row
		}
	}
}

// lastRound is the newest round of the watched epoch the last server
// published: the round in progress when the leaver's connection closes.
func (l *leavingRecord) lastRound() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := -1
	for r := range l.out {
		last = max(last, int(r))
	}
	return last
}

// leavingRun plays the leaving adversary (issue 26, §5.4 v3): m = 3
// servers, six long-running clients and, one epoch after another, a
// client that joins, shares and fetches like them and leaves mid-epoch;
// its connection closes at round d, which any observer of its link sees.
// The last server, corrupt, reads every output position's plaintext (one
// position a pseudonym) and asks which pseudonym's behaviour changes at
// d, comparing the rounds before d with those from d + W + 1 on: one
// whose uploads stop there (its onions turned to cover); one whose
// requests for fresh ids stop (ids first asked for in this epoch or the
// one before: never decoys, an epoch enters the window two epochs later,
// §6.3 v3); the most of the two marks; the fewest fresh requests after
// among those that made some before. Each guesses among the pseudonyms it
// singles out (all of them if none), n choices. Clients 0 and 1 share one
// fresh 32-chunk file after another; clients 2 to 5 and the leaver keep
// chunks of their own queued, and as the leaver's epoch opens all five
// start the same get of a file nobody fetched before, so that everyone's
// demand is alike. With cover (CoverHandover, the rule before, switched
// on in the test only) the onions the leaver handed over carry neither
// its chunks nor its get's requests. Trials are one a leaver's epoch,
// independent.
func leavingRun(t *testing.T, cover bool, trials int) (ups, reqs, both, fewest *tally) {
	const m, long = 3, 6
	rec := newAdvRecord()
	lr := &leavingRecord{out: map[uint32][]leavingOut{}, ord: map[[32]byte]int{}, asked: map[[32]byte]int{}}
	p := advParams(64)
	p.K, p.ChunkSize = 1, 1<<10
	b, k := int(p.ChunkSize), int(p.K)
	tn := startAnonNet(t, m, 0, long, p, func(i int, c *ServerConfig) {
		c.observe = rec.server(i)
		c.observe.LastOut = lr.observe(b, k)
	})
	ctx, cancel := context.WithTimeout(context.Background(), advTimeout(time.Duration(trials+20)*10*time.Minute))
	defer cancel()
	var (
		fmu   sync.Mutex
		first = map[int][32]byte{} // the first epoch each client joined
	)
	// start starts client i; the caller closes it (a test's cleanup kept
	// every leaver, closed, until the end: gigabytes at 400 trials).
	start := func(i int) *Client {
		o := rec.client(i)
		o.CoverHandover = cover
		joined := o.Joined
		o.Joined = func(epoch [32]byte, slot uint32, ps []byte) {
			joined(epoch, slot, ps)
			fmu.Lock()
			defer fmu.Unlock()
			if _, ok := first[i]; !ok {
				first[i] = epoch
			}
		}
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o, JobEpochs: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	share := func(ctx context.Context, c *Client) {
		if len(c.Inspect().Queued()) < 2*int(p.Rounds) {
			go c.Share(ctx, bytes.NewReader(anonRand(t, 2*int(p.Rounds)*b)), "q.bin", false)
		}
	}
	// The newest of the fresh 32-chunk files clients 0 and 1 share one
	// after another, and how many there were.
	var (
		lmu    sync.Mutex
		newest chunker.Link
		seq    int
	)
	link := func() (chunker.Link, int) {
		lmu.Lock()
		defer lmu.Unlock()
		return newest, seq
	}
	var clients []*Client
	for i := range long {
		c := start(i)
		defer c.Close()
		clients = append(clients, c)
	}
	for _, c := range clients[:2] {
		go func() {
			for ctx.Err() == nil {
				l, err := c.Share(ctx, bytes.NewReader(anonRand(t, 32*b)), "fresh.bin", false)
				if err != nil {
					return
				}
				lmu.Lock()
				newest, seq = l, seq+1
				lmu.Unlock()
			}
		}()
	}
	waitCount(ctx, t, "fresh files published", 1, func() int { _, n := link(); return n })
	rng := rand.New(rand.NewPCG(26, 5))
	ups, reqs, both, fewest = &tally{}, &tally{}, &tally{}, &tally{}
	// A leaver's share ends when it leaves: its follower, polling every
	// 2 s, kept the closed client until the end.
	next := start(long)
	defer func() { next.Close() }() // the last one, which never left
	lctx, lstop := context.WithCancel(ctx)
	defer func() { lstop() }()
	share(lctx, next)
	getL, getN := link()
	used, stopGets := 0, context.CancelFunc(func() {})
	for trial := 0; trial < trials; trial++ {
		idx := long + trial
		leaver := next
		for _, c := range clients[2:] {
			share(ctx, c)
		}
		var ep [32]byte
		waitCount(ctx, t, "the leaver's epoch", 1, func() int {
			fmu.Lock()
			defer fmu.Unlock()
			e, ok := first[idx]
			ep = e
			if ok {
				return 1
			}
			return 0
		})
		lr.mu.Lock()
		lr.watch, lr.out = ep, map[uint32][]leavingOut{}
		lr.mu.Unlock()
		// Every fetcher (clients 2 to 5 and the leaver) starts the same
		// get as the leaver's epoch opens, of a file none fetched before
		// (none of its ids a decoy), the newest when the trial before
		// began (its manifest in everyone's index); the gets before are
		// dropped. Their demand is alike: the leaver's is no one's own.
		stopGets()
		gets, stop := context.WithCancel(ctx)
		stopGets = stop
		if getN > used {
			used = getN
			for _, c := range append(slices.Clone(clients[2:]), leaver) {
				dir := t.TempDir()
				go c.Get(gets, getL, dir)
			}
		}
		getL, getN = link()
		// Some rounds in, its chunks and requests going out, it leaves.
		waitCount(ctx, t, "the leaver's rounds", 12, func() int { return lr.lastRound() + 1 })
		epochs := clients[1].Stats().Epochs
		d := lr.lastRound() + 1
		leaver.Close()
		lstop()
		next = start(idx + 1)
		l, stop := context.WithCancel(ctx)
		lstop = stop
		share(l, next)
		waitCount(ctx, t, "the next epoch", epochs+1, func() int { return int(clients[1].Stats().Epochs) })
		rec.mu.Lock()
		ps := rec.pseud[ep]
		truth := -1
		for q, pq := range ps {
			if bytes.Equal(pq, rec.joined[ep][idx].p) {
				truth = q
			}
		}
		rec.mu.Unlock()
		lr.mu.Lock()
		cur, ok := lr.ord[ep]
		if !ok {
			lr.mu.Unlock()
			t.Logf("trial %d: no round of the leaver's epoch published", trial)
			continue
		}
		n := len(ps)
		upB, upA := make([]int, n), make([]int, n)
		frB, frA := make([]int, n), make([]int, n)
		afterRounds := 0
		for r, row := range lr.out {
			after := int(r) >= d+int(p.W)+1
			if after {
				afterRounds++
			} else if int(r) >= d {
				continue
			}
			for q, o := range row {
				if q >= n {
					continue
				}
				fresh := 0
				for _, id := range o.reqs {
					if lr.asked[id] >= cur-1 {
						fresh++
					}
				}
				c := 0
				if o.chunk {
					c = 1
				}
				if after {
					upA[q] += c
					frA[q] += fresh
				} else {
					upB[q] += c
					frB[q] += fresh
				}
			}
		}
		lr.mu.Unlock()
		if truth < 0 || afterRounds == 0 {
			t.Logf("trial %d: no rounds after the departure at %d (pseudonym %d of %d)", trial, d, truth, n)
			continue
		}
		markU, markR, marks, drop := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		for q := range n {
			if upB[q] > 0 && upA[q] == 0 {
				markU[q] = 1
			}
			if frB[q] > 0 && frA[q] == 0 {
				markR[q] = 1
			}
			marks[q] = markU[q] + markR[q]
			// Fewest fresh requests after, of those that asked before.
			if frB[q] > 0 {
				drop[q] = afterRounds + 1 - frA[q]
			}
		}
		pn := 1 / float64(n)
		ups.add(top(rng, markU) == truth, pn, pn)
		reqs.add(top(rng, markR) == truth, pn, pn)
		both.add(top(rng, marks) == truth, pn, pn)
		fewest.add(top(rng, drop) == truth, pn, pn)
		if testing.Verbose() {
			t.Logf("trial %d: left at round %d, %d rounds after; the leaver %d of %d; by position: uploads %v before, %v after; fresh requests %v before, %v after; marked %v",
				trial, d, afterRounds, truth, n, upB, upA, frB, frA, marks)
		}
		if advFull() && trial%10 == 9 {
			t.Logf("%d trials of %d: uploads %s, fresh requests %s, both %s, fewest after %s", trial+1, trials, ups, reqs, both, fewest)
		}
	}
	return ups, reqs, both, fewest
}

// top is a position of the highest score, ties at random.
func top(rng *rand.Rand, score []int) int {
	var best []int
	for q, s := range score {
		switch {
		case len(best) == 0 || s > score[best[0]]:
			best = []int{q}
		case s == score[best[0]]:
			best = append(best, q)
		}
	}
	return best[rng.IntN(len(best))]
}

// TestAdversaryLeaving (issue 26, §5.4 v3): a client that leaves
// mid-epoch hands over onions that carry what it would have sent (its
// queued chunks, its job's requests), so the last server, which reads
// every pseudonym's payloads and knows the round its connection closed,
// finds its pseudonym among the epoch's n no better than chance by
// uploads or fresh requests that stop then; with cover onions (the rule
// before, switched on in the test only) both stop and give it away.
// R = 64, k = 1 (RIFFLE_ADVERSARY=1: 8 trials an arm; RIFFLE_LONG=1: 40)
// or the default R = 256 and 200 trials (RIFFLE_ADVERSARY_FULL=1).
func TestAdversaryLeaving(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		trials := adversaryTrials(t, 8, 40, 200)
		defU, defR, defB, defF := leavingRun(t, false, trials)
		ctlU, ctlR, ctlB, ctlF := leavingRun(t, true, trials)
		t.Logf("leaving, R = %d, k = 1, n = 7: onions carry the queue and the job: uploads stop %s, fresh requests stop %s, both %s, fewest fresh requests after %s; cover (control): uploads stop %s, fresh requests stop %s, both %s, fewest after %s",
			advParams(64).Rounds, defU, defR, defB, defF, ctlU, ctlR, ctlB, ctlF)
		checkLinks(t, "leavers by uploads", defU, ctlU)
		checkLinks(t, "leavers by fresh requests", defR, ctlR)
		checkLinks(t, "leavers by both", defB, ctlB)
		checkLinks(t, "leavers by fewest fresh requests after", defF, ctlF)
	})
}
