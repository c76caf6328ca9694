package node

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"
)

// crossEpoch plays the cross-epoch adversary (docs/anonymity.md, "How it
// is tested"): every one of n clients shares a file and the next client
// fetches it; then, in each of idle later epochs, for each client the
// adversary guesses which pseudonym is the uploader of file i as the one
// that asked for file i's root manifest most often (published requests
// are public; ties and no request: at random). heldDecoys breaks §6.3
// (v3) on purpose, drawing decoys from the chunks each client published
// or fetched, as v2 did.
func crossEpoch(t *testing.T, heldDecoys bool, idle int) *tally {
	const m, n = 3, 8
	rec := newAdvRecord()
	p := testParams(4)
	tn := startAnonNet(t, m, 0, n, p, func(i int, c *ServerConfig) { c.observe = rec.server(i) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var clients []*Client
	for i := 0; i < n; i++ {
		o := rec.client(i)
		o.HeldDecoys = heldDecoys
		c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), observe: o})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	roots := make([][32]byte, n)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			link, err := clients[i].Share(ctx, bytes.NewReader(anonRand(t, 2*int(p.ChunkSize))), fmt.Sprintf("f%d.bin", i), false)
			if err != nil {
				t.Error(err)
				return
			}
			roots[i] = [32]byte(link.ID)
			if _, err := clients[(i+1)%n].Get(ctx, link, t.TempDir()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The epochs seen so far carried the jobs; the idle ones come after.
	rec.mu.Lock()
	before := map[[32]byte]bool{}
	for id := range rec.joined {
		before[id] = true
	}
	rec.mu.Unlock()
	var idleIDs [][32]byte
	for len(idleIDs) < idle {
		if ctx.Err() != nil {
			t.Fatalf("%d idle epochs", len(idleIDs))
		}
		time.Sleep(100 * time.Millisecond)
		rec.mu.Lock()
		idleIDs = idleIDs[:0]
		for id, j := range rec.joined {
			if !before[id] && len(j) == n && rec.pseud[id] != nil && rec.ended(id, p.Rounds) {
				idleIDs = append(idleIDs, id)
			}
		}
		rec.mu.Unlock()
	}
	for _, c := range clients {
		c.Close()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rng := rand.New(rand.NewPCG(3, 4))
	tl := &tally{}
	for _, id := range idleIDs {
		ps := rec.pseud[id]
		for i, j := range rec.joined[id] {
			truth := -1
			for q, pq := range ps {
				if bytes.Equal(pq, j.p) {
					truth = q
				}
			}
			count := make([]int, n)
			for k, ids := range rec.reqs {
				if k.epoch != id {
					continue
				}
				for _, x := range ids {
					if x == roots[i] {
						count[k.q]++
					}
				}
			}
			best, top := []int{}, 0
			for q, c := range count {
				switch {
				case c > top:
					best, top = []int{q}, c
				case c == top:
					best = append(best, q)
				}
			}
			pn := 1 / float64(n)
			tl.add(best[rng.IntN(len(best))] == truth, pn, pn)
		}
	}
	return tl
}

// ended reports whether all R rounds of epoch id published requests.
func (a *advRecord) ended(id [32]byte, R uint32) bool {
	for k := range a.reqs {
		if k.epoch == id && k.r == R-1 {
			return true
		}
	}
	return false
}

// TestAdversaryCrossEpoch: with decoys from public demand (§6.3 v3) the
// cross-epoch adversary links an uploader's later pseudonyms no better
// than chance; with decoys drawn from held chunks (v2, broken on purpose)
// the same adversary links far above chance, which shows it has teeth.
// It runs two networks for many epochs (about 3.5 minutes), so only with
// RIFFLE_LONG=1 (RIFFLE_ADVERSARY=1: a shorter run of 8 idle epochs).
func TestAdversaryCrossEpoch(t *testing.T) {
	idle := 0
	switch {
	case os.Getenv("RIFFLE_LONG") != "":
		idle = 30
	case os.Getenv("RIFFLE_ADVERSARY") != "":
		idle = 8
	default:
		t.Skip("RIFFLE_LONG=1 or RIFFLE_ADVERSARY=1 runs it")
	}
	v3 := crossEpoch(t, false, idle)
	v2 := crossEpoch(t, true, idle)
	t.Logf("cross-epoch, %d idle epochs, n = 8: public decoys %s; decoys from held chunks (control) %s", idle, v3, v2)
	if float64(v3.wins) > v3.bound() {
		t.Errorf("public decoys: the adversary links across epochs above chance: %s", v3)
	}
	if float64(v2.wins) <= v2.bound() || math.IsNaN(v2.bound()) {
		t.Errorf("control: decoys from held chunks are not exploited: %s; the adversary is broken", v2)
	}
}
