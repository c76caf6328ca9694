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

	"github.com/riffle-net/riffle/internal/wait"
)

// crossEpoch plays the cross-epoch adversary (docs/anonymity.md, "How it
// is tested"): every one of n clients shares a file and the next client
// fetches it; then, in each of idle later epochs, for each client the
// adversary guesses which pseudonym is the uploader of file i as the one
// that asked for a chunk of file i (manifest or data) most often (published requests
// are public; ties and no request: at random). heldDecoys breaks §6.3
// (v3) on purpose, drawing decoys from the chunks each client published
// or fetched, as v2 did.
//
// It also returns how many requests for the files' chunks the idle
// epochs published (decoys only: no job runs then) and the fewest epochs
// any client admitted to its decoy pool on a closing record.
func crossEpoch(t *testing.T, heldDecoys bool, idle int) (*tally, int, int) {
	const m, n = 3, 8
	rec := newAdvRecord()
	p := advParams(4)
	tn := startAnonNet(t, m, 0, n, p, func(i int, c *ServerConfig) { c.observe = rec.server(i) })
	ctx, cancel := context.WithTimeout(context.Background(), advTimeout(10*time.Minute))
	defer cancel()
	var clients []*Client
	for i := 0; i < n; i++ {
		o := rec.client(i)
		o.HeldDecoys = heldDecoys
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	files := make([]map[[32]byte]bool, n)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := clients[i].StartShare(ctx, bytes.NewReader(anonRand(t, 2*int(p.ChunkSize))), fmt.Sprintf("f%d.bin", i), false)
			if err != nil {
				t.Error(err)
				return
			}
			select {
			case <-h.Done():
			case <-ctx.Done():
				t.Error("share not done")
				return
			}
			link, _, _, err := h.Result()
			if err != nil {
				t.Error(err)
				return
			}
			files[i] = map[[32]byte]bool{}
			for _, id := range h.IDs {
				files[i][id] = true
			}
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
	if err := wait.UntilEvery(ctx, advTimeout(10*time.Minute), 100*time.Millisecond, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		idleIDs = idleIDs[:0]
		for id, j := range rec.joined {
			if !before[id] && len(j) == n && rec.pseud[id] != nil && rec.ended(id, p.Rounds) {
				idleIDs = append(idleIDs, id)
			}
		}
		return len(idleIDs) >= idle
	}); err != nil {
		t.Fatalf("%d idle epochs", len(idleIDs))
	}
	closed := -1
	for _, c := range clients {
		n := c.Inspect().DecoyEpochs()
		if closed < 0 || n < closed {
			closed = n
		}
	}
	for _, c := range clients {
		c.Close()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rng := rand.New(rand.NewPCG(3, 4))
	tl := &tally{}
	asked := 0
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
			for _, k := range rec.byEpoch[id] {
				for _, x := range rec.reqs[k] {
					if files[i][x] {
						count[k.q]++
						asked++
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
	return tl, asked, closed
}

// ended reports whether all R rounds of epoch id published requests.
func (a *advRecord) ended(id [32]byte, R uint32) bool { return a.listed[epochRound{id, R - 1}] }

// TestAdversaryCrossEpoch: with decoys from public demand (§6.3 v3: the
// (position, id) pairs of epochs admitted by their closing records, which
// do ask for the shared files in the idle epochs) the cross-epoch
// adversary links an uploader's later pseudonyms no better than chance; with decoys drawn from held chunks (v2, broken on purpose)
// the same adversary links far above chance, which shows it has teeth.
// It runs two networks for many epochs (about 3.5 minutes), so only with
// RIFFLE_LONG=1 (RIFFLE_ADVERSARY=1: a shorter run of 8 idle epochs;
// RIFFLE_ADVERSARY_FULL=1: 25, 200 trials).
func TestAdversaryCrossEpoch(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		idle := adversaryTrials(t, 8, 30, 25)
		v3, asked, closed := crossEpoch(t, false, idle)
		v2, _, _ := crossEpoch(t, true, idle)
		t.Logf("cross-epoch, %d idle epochs, n = 8: public decoys %s (%d decoy requests for the files' chunks, every client's pool with at least %d closed epochs); decoys from held chunks (control) %s", idle, v3, asked, closed, v2)
		// The public decoys were there to be read: drawn from epochs that
		// their closing records admitted (§6.3 v3), they asked for the
		// files' chunks, so chance is not the mere absence of decoys.
		if closed < 1 || asked == 0 {
			t.Errorf("public decoys: %d decoy requests for the files' chunks, %d closed epochs in the poorest pool: the closing records did not admit the decoy epochs", asked, closed)
		}
		checkLinks(t, "decoys across epochs", v3, v2)
	})
}
