//go:build riffletest

package node

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// newcomerRun plays the newcomer adversary (issue 26, §6.3 v3) at the
// default R = 256 and k = 1: m = 3 servers, seven long-running clients
// and, one epoch after another, a client in its first epoch (a newcomer,
// or with restart the same client restarted on its data directory). Its
// primary sees it arrive; the adversary guesses its pseudonym in that
// epoch as the one that asked for fewest ids (published requests; ties at
// random), n choices. With own true (the positive control, OwnDecoys,
// switched on in the test only) clients draw from the lists they
// received themselves: a newcomer's pool is empty. Trials are one per
// epoch, each a different client; the variance bound is Σ p.
func newcomerRun(t *testing.T, own, restart bool, trials int) *tally {
	const m, long = 3, 7
	rec := newAdvRecord()
	p := advParams(256)
	p.K, p.ChunkSize = 1, 1<<10
	tn := startAnonNet(t, m, 0, 4, p, func(i int, c *ServerConfig) { c.observe = rec.server(i) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(trials+20)*10*time.Minute)
	defer cancel()
	start := func(i int, dir string) *Client {
		o := rec.client(i)
		o.OwnDecoys = own
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, DataDir: dir, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var clients []*Client
	for i := range long {
		clients = append(clients, start(i, ""))
	}
	// Demand that decoys then carry on: one share, three gets.
	link, err := clients[0].Share(ctx, bytes.NewReader(anonRand(t, 3*int(p.ChunkSize))), "demand.bin", false)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 4; i++ {
		if _, err := clients[i].Get(ctx, link, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if restart {
		// The restarted client runs long enough to hold a window first.
		c := start(long, dir)
		first := rec.epochsOf(long)
		waitCount(ctx, t, "epochs of the client to restart", first+DecoyEpochs+2, func() int { return rec.epochsOf(long) })
		c.Close()
	}
	rng := rand.New(rand.NewPCG(26, 1))
	tl := &tally{}
	var prev *Client
	for k := 0; k < trials; k++ {
		idx := long + 1 + k
		d := ""
		if restart {
			idx, d = long, dir
		}
		before := rec.firstEpochs(idx)
		c := start(idx, d)
		var ep [32]byte
		waitCount(ctx, t, "the newcomer's first epoch", 1, func() int {
			e, ok := rec.newEpochOf(idx, before)
			ep = e
			if ok {
				return 1
			}
			return 0
		})
		waitCount(ctx, t, "the newcomer's epoch to end", 1, func() int {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.pseud[ep] != nil && rec.ended(ep, p.Rounds) {
				return 1
			}
			return 0
		})
		// The last newcomer leaves only now: leaving mid-epoch hands over
		// handoverMax rounds of cover, and a longer epoch would end early,
		// never reaching its last round.
		if prev != nil {
			prev.Close()
		}
		rec.mu.Lock()
		ps := rec.pseud[ep]
		truth := -1
		for q, pq := range ps {
			if bytes.Equal(pq, rec.joined[ep][idx].p) {
				truth = q
			}
		}
		count := make([]int, len(ps))
		for _, key := range rec.byEpoch[ep] {
			if key.q >= len(ps) {
				continue
			}
			for _, x := range rec.reqs[key] {
				if x != ([32]byte{}) {
					count[key.q]++
				}
			}
		}
		rec.mu.Unlock()
		var best []int
		low := -1
		for q, x := range count {
			switch {
			case low < 0 || x < low:
				best, low = []int{q}, x
			case x == low:
				best = append(best, q)
			}
		}
		pn := 1 / float64(len(ps))
		tl.add(best[rng.IntN(len(best))] == truth, pn, pn)
		if advFull() && k%10 == 9 {
			t.Logf("%d trials of %d, %v of CPU: %s", k+1, trials, cpuTime(t).Round(time.Second), tl)
		}
		if restart {
			c.Close()
		} else {
			prev = c
		}
	}
	return tl
}

// epochsOf counts the epochs client i joined.
func (a *advRecord) epochsOf(i int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, j := range a.joined {
		if _, ok := j[i]; ok {
			n++
		}
	}
	return n
}

// firstEpochs returns the epochs client i joined so far.
func (a *advRecord) firstEpochs(i int) map[[32]byte]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[[32]byte]bool{}
	for id, j := range a.joined {
		if _, ok := j[i]; ok {
			out[id] = true
		}
	}
	return out
}

// newEpochOf returns an epoch client i joined that is not in before.
func (a *advRecord) newEpochOf(i int, before map[[32]byte]bool) ([32]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, j := range a.joined {
		if _, ok := j[i]; ok && !before[id] {
			return id, true
		}
	}
	return [32]byte{}, false
}

// TestAdversaryNewcomer (issue 26, §6.3 v3): a client in its first epoch
// draws decoys from the group's window like everyone, so the newcomer
// adversary links it at chance; with the old rule (own lists, the
// positive control) its empty pool gives it away. R = 256, k = 1. Only
// with RIFFLE_ADVERSARY=1 (6 trials an arm, about 3 minutes) or
// RIFFLE_LONG=1 or RIFFLE_ADVERSARY_FULL=1 (200 trials).
func TestAdversaryNewcomer(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		trials := adversaryTrials(t, 6, 200, 200)
		def := newcomerRun(t, false, false, trials)
		ctl := newcomerRun(t, true, false, trials)
		t.Logf("newcomer, R = 256, k = 1, n = 8: group window %s; own lists (control) %s", def, ctl)
		checkLinks(t, "newcomers", def, ctl)
	})
}

// TestAdversaryRestart: the same for a client restarted on its data
// directory (it fetches the whole window again, as every client does).
func TestAdversaryRestart(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		trials := adversaryTrials(t, 6, 200, 200)
		def := newcomerRun(t, false, true, trials)
		ctl := newcomerRun(t, true, true, trials)
		t.Logf("restart, R = 256, k = 1, n = 8: group window %s; own lists (control) %s", def, ctl)
		checkLinks(t, "restarted clients", def, ctl)
	})
}
