//go:build riffletest

package node

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// withheldRun plays the adversary that withholds the published records
// (§5.2, §6.3 v3): servers 0 and 1 are corrupt and leave every closing
// record and pool out of the index pages and windows they send two
// victims (clients 0 and 1, whose primaries they are). A client draws its
// decoys only from epochs whose record and pool it holds: a victim that
// held none would send no decoys, and its pseudonym would be the one that
// asks for least. The adversary guesses each victim's pseudonym in each
// epoch as the one with the fewest requests in the epoch's published
// lists (ties at random), n = 8 choices. With fill true the victims take
// the window from every chain server at once (window_client.go); with
// fill false (the positive control, OwnDecoys and NoClosingFill, switched
// on in the test only) they draw by the old rule from the records their
// primary's index pages bring. Trials are counted in epochs in which at
// least half the pseudonyms asked for something (decoys are under way);
// as in TestAdversaryLinks the variance bound is Σ p.
func withheldRun(t *testing.T, fill bool, epochs int) *tally {
	const m, n = 3, 8
	rec := newAdvRecord()
	p := advParams(4)
	var (
		vmu     sync.Mutex
		victims = map[peer.ID]bool{}
	)
	tn := startAnonNet(t, m, 0, n, p, func(i int, c *ServerConfig) {
		o := rec.server(i)
		if i < 2 {
			o.IndexClosings = func(to peer.ID, recs [][]byte) [][]byte {
				vmu.Lock()
				defer vmu.Unlock()
				if victims[to] {
					return nil
				}
				return recs
			}
			o.WindowReply = func(to peer.ID, w *wire.Window) {
				vmu.Lock()
				defer vmu.Unlock()
				if victims[to] {
					for j := range w.Items {
						w.Items[j].Closing, w.Items[j].Pool = nil, nil
					}
				}
			}
		}
		c.observe = o
	})
	ctx, cancel := context.WithTimeout(context.Background(), advTimeout(8*time.Minute))
	defer cancel()
	var clients []*Client
	for i := 0; i < n; i++ {
		o := rec.client(i)
		o.OwnDecoys, o.NoClosingFill = i < 2 && !fill, i < 2 && !fill
		c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), clientHookCfg: clientHookCfg{observe: o}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i < 2 {
			vmu.Lock()
			victims[c.h.ID()] = true
			vmu.Unlock()
		}
		clients = append(clients, c)
	}
	// Demand for decoys: one client shares a file, three fetch it.
	link, err := clients[2].Share(ctx, bytes.NewReader(anonRand(t, 5*int(p.ChunkSize))), "demand.bin", false)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 5; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := clients[i].Get(ctx, link, t.TempDir()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Requests by output position in each complete epoch.
	counts := func() map[[32]byte][]int {
		out := map[[32]byte][]int{}
		for id, j := range rec.joined {
			if len(j) != n || rec.pseud[id] == nil || !rec.ended(id, p.Rounds) {
				continue
			}
			c := make([]int, n)
			for _, k := range rec.byEpoch[id] {
				if k.q >= n {
					continue
				}
				for _, x := range rec.reqs[k] {
					if x != ([32]byte{}) {
						c[k.q]++ // an empty slot is all zero
					}
				}
			}
			asking := 0
			for _, x := range c {
				if x > 0 {
					asking++
				}
			}
			if asking >= n/2 {
				out[id] = c
			}
		}
		return out
	}
	waitCount(ctx, t, "epochs with decoys under way", epochs, func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(counts())
	})
	for _, c := range clients {
		c.Close()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rng := rand.New(rand.NewPCG(13, 14))
	tl := &tally{}
	cs := counts()
	var ids [][32]byte
	for id := range cs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return bytes.Compare(ids[a][:], ids[b][:]) < 0 })
	for _, id := range ids {
		c := cs[id]
		var best []int
		low := -1
		for q, x := range c {
			switch {
			case low < 0 || x < low:
				best, low = []int{q}, x
			case x == low:
				best = append(best, q)
			}
		}
		for v := 0; v < 2; v++ {
			truth := -1
			for q, pq := range rec.pseud[id] {
				if bytes.Equal(pq, rec.joined[id][v].p) {
					truth = q
				}
			}
			pn := 1 / float64(n)
			tl.add(best[rng.IntN(len(best))] == truth, pn, pn)
		}
	}
	return tl
}

// TestAdversaryWithheldRecord (§5.2, §6.3 v3): servers that withhold the
// closing records from a client do not single it out, since the client
// takes the window from every chain server; a client that takes its
// primary's records as all (the positive control) sends no decoys and is
// linked far above chance. Only with RIFFLE_ADVERSARY=1 (12 epochs of
// each kind, 24 trials), RIFFLE_LONG=1 (40 epochs) or
// RIFFLE_ADVERSARY_FULL=1 (100 epochs, 200 trials).
func TestAdversaryWithheldRecord(t *testing.T) {
	virtual(t, func(t *testing.T) {
		epochs := adversaryTrials(t, 12, 40, 100)
		def := withheldRun(t, true, epochs)
		ctl := withheldRun(t, false, epochs)
		t.Logf("withheld closing records, m = 3, n = 8: victims that take the window from every server %s; victims that take their primary's records as all (control) %s", def, ctl)
		checkLinks(t, "victims of withheld closing records", def, ctl)
	})
}
