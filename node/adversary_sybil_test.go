//go:build riffletest

package node

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
)

// sybilResult is what sybilRun measured.
type sybilResult struct {
	tl *tally
	// held counts the epochs the victim joined with fewer clients
	// through servers it trusts than its minimum; small is the smallest
	// such count in an epoch its jobs sent a request in.
	held, small int
}

// sybilRun plays Sybil clients registered through corrupt primaries
// (§3 v3, "the anonymity set counts registered clients"). Servers 0 and 1
// are corrupt and register five clients of their own (the Sybils), which
// stay throughout; one of them shares bait files, one after another.
// Server 2 is honest and is the primary of the victim, which fetches the
// bait files one after another with --min-anonymity 3. With control
// false the victim trusts its primary only: it is alone there at first,
// then two honest idle clients join through server 2. With control true
// (the positive control) the victim also trusts servers 0 and 1, as a
// user who picked the wrong servers would, and stays alone with the
// Sybils.
//
// A trial is an epoch in which the victim's jobs sent a request (the
// truth, from the client). The adversary knows which pseudonym fetched
// its bait and which pseudonyms are its own; it guesses the victim as a
// client drawn at random from the clients present that are not its own
// (with one honest server in the chain, the permutations it holds tell
// it nothing more). Chance is one over the anonymity set the victim's
// check accepted: the clients registered through servers it trusts.
func sybilRun(t *testing.T, control bool, trials int) sybilResult {
	const m, sybils, minAnon = 3, 5, 3
	victim := sybils
	rec := newAdvRecord()
	p := advParams(4)
	tn := startAnonNet(t, m, 0, sybils+1, p, func(i int, c *ServerConfig) { c.observe = rec.server(i) })
	ctx, cancel := context.WithTimeout(context.Background(), advTimeout(8*time.Minute))
	defer cancel()
	var (
		mu      sync.Mutex
		realReq = map[[32]byte]int{} // epoch → the victim's real requests
	)
	primaryOf := map[int]int{}
	start := func(idx, primary int, cfg ClientConfig) *Client {
		o := rec.client(idx)
		if idx == victim {
			o.Requested = func(epoch [32]byte, _ uint32, ids [][32]byte) {
				mu.Lock()
				defer mu.Unlock()
				realReq[epoch] += len(ids)
			}
		}
		cfg.Server, cfg.Logger, cfg.Observe, cfg.Now = tn.servers[primary].Addrs()[0].String(), anonLogger(), o, true
		c, err := NewClient(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		mu.Lock()
		primaryOf[idx] = primary
		mu.Unlock()
		return c
	}
	var syb []*Client
	for i := 0; i < sybils; i++ {
		syb = append(syb, start(i, i%2, ClientConfig{Network: testNet(t), MinAnonymity: 1}))
	}
	trust := []int{2}
	vc := ClientConfig{Network: testNet(t), MinAnonymity: minAnon}
	if control {
		trust = []int{0, 1, 2}
		vc.Require = []peer.ID{tn.servers[0].ID(), tn.servers[1].ID()}
	}
	v := start(victim, 2, vc)
	bait := make(chan chunker.Link, 64)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; runCtx.Err() == nil; k++ {
			link, err := syb[0].Share(runCtx, bytes.NewReader(anonRand(t, 3*int(p.ChunkSize)-300)), fmt.Sprintf("bait-%d.bin", k), false)
			if err != nil {
				return
			}
			select {
			case bait <- link:
			case <-runCtx.Done():
				return
			}
		}
	}()
	jobEpochs := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range realReq {
			if r > 0 {
				n++
			}
		}
		return n
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for runCtx.Err() == nil {
			select {
			case link := <-bait:
				v.Get(runCtx, link, t.TempDir())
			case <-runCtx.Done():
				return
			}
		}
	}()
	// Alone through its primary, the defended victim holds its jobs for
	// some epochs; then two honest clients join through server 2.
	victimEpochs := func() (n int) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, j := range rec.joined {
			if _, ok := j[victim]; ok {
				n++
			}
		}
		return n
	}
	if !control {
		waitCount(ctx, t, "epochs with the victim alone", 5, victimEpochs)
		for i := 1; i <= 2; i++ {
			start(victim+i, 2, ClientConfig{Network: testNet(t), MinAnonymity: 1})
		}
	}
	waitCount(ctx, t, "epochs with the victim's requests", trials, jobEpochs)
	stop()
	mu.Lock()
	defer mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rng := rand.New(rand.NewPCG(9, 10))
	res := sybilResult{tl: &tally{}, small: -1}
	trusted := map[int]bool{}
	for _, s := range trust {
		trusted[s] = true
	}
	for epoch, present := range rec.joined {
		if _, ok := present[victim]; !ok {
			continue
		}
		var honest []int
		set := 0
		for c := range present {
			if c >= sybils {
				honest = append(honest, c)
			}
			if trusted[primaryOf[c]] {
				set++
			}
		}
		if set < minAnon {
			res.held++
		}
		if realReq[epoch] == 0 {
			continue
		}
		if res.small < 0 || set < res.small {
			res.small = set
		}
		pn := 1 / float64(set)
		res.tl.add(honest[rng.IntN(len(honest))] == victim, pn, pn*(1-pn))
	}
	return res
}

// TestAdversarySybil (§3 v3): Sybils registered through corrupt primaries
// fill the epoch around a victim. A victim that counts its anonymity set
// over the servers it trusts holds its jobs while it is alone there, and
// is linked no better than chance once it carries them; a victim that
// trusts the corrupt servers (the positive control) carries its jobs
// among Sybils alone and is linked in every trial. It runs two networks
// for some minutes, so only with RIFFLE_ADVERSARY=1 (12 trials of each
// kind), RIFFLE_LONG=1 (40) or RIFFLE_ADVERSARY_FULL=1 (200).
func TestAdversarySybil(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		trials := adversaryTrials(t, 12, 40, 200)
		def := sybilRun(t, false, trials)
		ctl := sybilRun(t, true, trials)
		t.Logf("Sybils through corrupt primaries, m = 3, 5 Sybils, --min-anonymity 3: victim trusting its primary: alone through it in %d epochs, carried its jobs only with at least %d trusted clients, linked %s; victim trusting the corrupt servers (control): linked %s",
			def.held, def.small, def.tl, ctl.tl)
		if def.small < 3 {
			t.Errorf("the victim carried its jobs in an epoch with %d clients through servers it trusts, below its minimum 3", def.small)
		}
		if def.held < 3 {
			t.Errorf("the victim was alone through its primary in only %d epochs: the test did not try it", def.held)
		}
		checkLinks(t, "a victim among Sybils", def.tl, ctl.tl)
	})
}
