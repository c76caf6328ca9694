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

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/internal/leader"
)

// shrinkRun plays the leader that shrinks an epoch around one honest
// client (finding 1 of the bounded leader, §3 v3). Servers 0 and 1 are
// corrupt; each registers three clients of its own (the Sybils) and,
// when it leads, selects every Sybil and one honest client only, the
// first its list holds of the honest primary's, leaving the other honest
// registrations out; the corrupt servers sign it. Server 2 is honest and
// the primary of four honest clients, which fetch the Sybils' bait files
// one after another; with control true (the positive control) it signs
// whatever the leader selects, as a server without the v3 checks would.
//
// A trial is an epoch in which the honest clients' jobs sent requests
// (the truth, from the clients): the adversary takes one pseudonym that
// fetched its bait (drawn among them) and, knowing its own clients,
// guesses the client behind it at random among the honest clients of
// the epoch. Chance is one
// in four: every honest client registers for every epoch. The honest
// clients take any anonymity set (--min-anonymity 1), so that only the
// servers' checks stand between them and the shrink.
func shrinkRun(t *testing.T, control bool, trials int) (tl *tally, shrunk, epochs int) {
	const m, sybils, honest = 3, 6, 4
	rec := newAdvRecord()
	p := advParams(4)
	var tn *anonNet
	shrink := func(chain []peer.ID, keys [][32]byte, cl *leader.Closed) [][32]byte {
		hp := -1
		for j, id := range chain {
			if id == tn.servers[2].ID() {
				hp = j
			}
		}
		var out [][32]byte
		kept := false
		for _, k := range keys {
			if int(cl.PrimaryOf[k]) != hp {
				out = append(out, k)
			} else if !kept {
				out, kept = append(out, k), true
			}
		}
		return out
	}
	tn = startAnonNet(t, m, 0, sybils+1, p, func(i int, c *ServerConfig) {
		c.observe = rec.server(i)
		switch {
		case i < 2:
			c.cheat = &leaderCheat{shrink: shrink, signAny: true}
		case control:
			c.cheat = &leaderCheat{signAny: true}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), advTimeout(8*time.Minute))
	defer cancel()
	var (
		mu      sync.Mutex
		realReq = map[[32]byte]map[int]int{} // epoch → honest client → real requests
		baits   []chunker.Link
	)
	start := func(idx, primary int) *Client {
		o := rec.client(idx)
		if idx >= sybils {
			o.Requested = func(epoch [32]byte, _ uint32, ids [][32]byte) {
				mu.Lock()
				defer mu.Unlock()
				if realReq[epoch] == nil {
					realReq[epoch] = map[int]int{}
				}
				realReq[epoch][idx] += len(ids)
			}
		}
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[primary].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var syb, hon []*Client
	for i := 0; i < sybils; i++ {
		syb = append(syb, start(i, i%2))
	}
	for i := 0; i < honest; i++ {
		hon = append(hon, start(sybils+i, 2))
	}
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
			mu.Lock()
			baits = append(baits, link)
			mu.Unlock()
		}
	}()
	for i := range hon {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; runCtx.Err() == nil; {
				mu.Lock()
				var link *chunker.Link
				if k < len(baits) {
					link = &baits[k]
				}
				mu.Unlock()
				if link == nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				hon[i].Get(runCtx, *link, t.TempDir())
				k++
			}
		}()
	}
	count := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, per := range realReq {
			for _, r := range per {
				if r > 0 {
					n++
					break
				}
			}
		}
		return n
	}
	waitCount(ctx, t, "trials", trials, count)
	stop()
	mu.Lock()
	defer mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rng := rand.New(rand.NewPCG(11, 12))
	tl = &tally{}
	var ids [][32]byte
	for epoch := range rec.joined {
		ids = append(ids, epoch)
	}
	sort.Slice(ids, func(a, b int) bool { return bytes.Compare(ids[a][:], ids[b][:]) < 0 })
	for _, epoch := range ids {
		present := rec.joined[epoch]
		var hs []int
		for c := range present {
			if c >= sybils {
				hs = append(hs, c)
			}
		}
		sort.Ints(hs)
		if len(hs) == 0 {
			continue
		}
		epochs++
		if len(hs) == 1 { // an honest client that misses a window is no shrink
			shrunk++
		}
		var fetched []int
		for c, r := range realReq[epoch] {
			if r > 0 {
				fetched = append(fetched, c)
			}
		}
		if len(fetched) == 0 {
			continue
		}
		sort.Ints(fetched)
		c := fetched[rng.IntN(len(fetched))]
		pn := 1 / float64(honest)
		tl.add(hs[rng.IntN(len(hs))] == c, pn, pn*(1-pn))
	}
	return tl, shrunk, epochs
}

// TestAdversaryShrink (§3 v3): a leader that selects one honest client
// among its own is refused by the honest server, so every epoch that
// runs holds all the honest clients and the adversary links no better
// than chance; with the honest server signing what the leader selects
// (the positive control) the shrunk epochs run and the adversary links
// far above chance. Only with RIFFLE_ADVERSARY=1 (20 trials of each kind)
// RIFFLE_LONG=1 (60) or RIFFLE_ADVERSARY_FULL=1 (200).
func TestAdversaryShrink(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		trials := adversaryTrials(t, 20, 60, 200)
		def, dShrunk, dEpochs := shrinkRun(t, false, trials)
		t.Logf("with the v3 checks (the first arm): %d of %d epochs shrunk, linked %s", dShrunk, dEpochs, def)
		ctl, cShrunk, cEpochs := shrinkRun(t, true, trials)
		t.Logf("a leader that shrinks epochs, m = 3, 6 Sybils, 4 honest clients: with the v3 checks %d of %d epochs ran with one honest client, linked %s; without them (control) %d of %d ran shrunk, linked %s",
			dShrunk, dEpochs, def, cShrunk, cEpochs, ctl)
		if dShrunk > 0 {
			t.Errorf("%d epochs ran with one honest client alone", dShrunk)
		}
		checkLinks(t, "the shrink adversary", def, ctl)
	})
}
