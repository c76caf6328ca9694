//go:build riffletest

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

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/store"
)

// The active linking adversary (docs/anonymity.md, "How it is tested"):
// corrupt servers that do more than watch. Each strategy runs real epochs
// with m = 3 servers and n = 8 clients; the corrupt servers' behaviour is
// replaced through the observer hooks (observe.go), and the clients record
// the ground truth, which the adversary never gets.

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
// in the next epoch (ClientObserver.RetryCorrupted, switched on in the
// test only). The strategy reads only the public request lists and what
// the victims' primaries know (their clients' slots), so where the honest
// server (here server 2, no victim's primary) sits in the chain does not
// matter to it.
//
// Independence: trials of one epoch pair share the decoys of the other
// clients; as in TestAdversaryLinks the variance bound is Σ p, not
// Σ p(1−p).
func TestAdversarySpoiledAnswers(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		const m, n = 3, 8
		// Trials of each kind; the control links nearly every trial, so
		// that even 5 clear the bound (4 of 5 at chance 1/8).
		target := 8
		switch {
		case advFull():
			target = 200
		case os.Getenv("RIFFLE_LONG") != "":
			target = 100
		case testing.Short():
			target = 5
		}
		p := advParams(4)
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
		ctx, cancel := context.WithTimeout(context.Background(), advTimeout(10*time.Minute))
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
			c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o, JobEpochs: 1000}})
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
							// Another victim's; dropped when the queue
							// is full (at R = 256 shares outrun gets,
							// and a blocking put back hung the victim).
							select {
							case src <- f:
							default:
							}
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
			// Where each id was first asked for (epoch index, round), in
			// one pass: a pass a trial grew with the square of the epochs.
			type at struct {
				x int
				r uint32
			}
			first := map[[32]byte]at{}
			for k, ids := range rec.reqs {
				a := at{before[k.epoch], k.r}
				for _, id := range ids {
					if f, ok := first[id]; !ok || a.x < f.x || a.x == f.x && a.r < f.r {
						first[id] = a
					}
				}
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
							if first[id] == (at{x, r}) {
								asked[id] = true
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
		null, ctl := playUntil(ctx, t, target, play)
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
	})
}

// gapTrial is one file of the index-gap adversary.
type gapTrial struct {
	id              [32]byte // the file's data chunk
	victim, fetcher int
	pub             int // epochs joined when its share returned
}

// TestAdversaryIndexGap (§7 v3): the victims' primaries, two corrupt
// servers of three, leave a fresh file's manifest out of the index they
// send one victim, and guess that the victim is the file's fetcher if
// nobody asks for the file's chunk in the two epochs after it was
// published. The test makes the victim the fetcher with probability ½
// (else another client), so chance is ½. Victims 0, 1, 6 and 7 complete
// their copy from the chain's other servers when the signed lists of the
// epoch they are in name a manifest their primary left out, at a
// checkpoint or after the epoch's last list (node/client/checkpoint.go);
// victims 3 and 4, the positive
// control, take their primary's copy as whole (NoGapFill, switched on in
// the test only), and their fetch never starts. Every client shares a
// file of one chunk after another; a trial is one file. Trials are
// independent coins (variance p(1−p)).
func TestAdversaryIndexGap(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		const m, n = 3, 8
		target := 28 // trials of each kind: 28 coins have a z = 4 bound of 0.88
		switch {
		case advFull():
			target = 200
		case os.Getenv("RIFFLE_LONG") != "":
			target = 300
		case testing.Short():
			target = 24
		}
		p := advParams(4)
		honest, control := []int{0, 1, 6, 7}, []int{3, 4}
		isControl := map[int]bool{3: true, 4: true}
		rec := newAdvRecord()
		var (
			mu     sync.Mutex
			order  [][32]byte
			omit   = map[peer.ID][][32]byte{} // victim → data chunks whose manifests are left out
			trials []gapTrial
			ids    = make([]peer.ID, n)
		)
		tn := startAnonNet(t, m, 0, 0, p, func(i int, c *ServerConfig) {
			o := rec.server(i)
			if i < 2 {
				o.IndexReply = func(to peer.ID, mans []store.Manifest) []store.Manifest {
					mu.Lock()
					defer mu.Unlock()
					var out []store.Manifest
				next:
					for _, mf := range mans {
						for _, id := range omit[to] {
							if bytes.Contains(mf.Data, id[:]) {
								continue next
							}
						}
						out = append(out, mf)
					}
					return out
				}
			}
			c.observe = o
		})
		ctx, cancel := context.WithTimeout(context.Background(), advTimeout(10*time.Minute))
		defer cancel()
		var clients []*Client
		for i := 0; i < n; i++ {
			o := rec.client(i)
			joined := o.Joined
			o.Joined = func(epoch [32]byte, slot uint32, ps []byte) {
				joined(epoch, slot, ps)
				mu.Lock()
				defer mu.Unlock()
				for _, e := range order {
					if e == epoch {
						return
					}
				}
				order = append(order, epoch)
			}
			o.NoGapFill = isControl[i]
			c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o, JobEpochs: 1000}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clients = append(clients, c)
			ids[i] = c.Inspect().PeerID()
		}
		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() { stop(); wg.Wait() }()
		for u := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(u), 7))
				for k := 0; runCtx.Err() == nil; k++ {
					pool := honest
					if k%2 == 1 {
						pool = control
					}
					v := pool[rng.IntN(len(pool))]
					if v == u {
						continue
					}
					f := v
					if rng.IntN(2) == 1 {
						for f == v || f == u {
							f = rng.IntN(n)
						}
					}
					data := anonRand(t, int(p.ChunkSize)/2)
					id := [32]byte(chunker.Sum(data))
					mu.Lock()
					omit[ids[v]] = append(omit[ids[v]], id)
					mu.Unlock()
					link, err := clients[u].Share(runCtx, bytes.NewReader(data), fmt.Sprintf("g%d-%d.bin", u, k), false)
					if err != nil {
						return
					}
					mu.Lock()
					trials = append(trials, gapTrial{id: id, victim: v, fetcher: f, pub: len(order)})
					mu.Unlock()
					dir := t.TempDir()
					wg.Add(1)
					go func() {
						defer wg.Done()
						clients[f].Get(runCtx, link, dir) // a control victim's never starts
					}()
				}
			}()
		}
		play := func() (null, ctl *tally) {
			null, ctl = &tally{}, &tally{}
			mu.Lock()
			defer mu.Unlock()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			asked := map[[32]byte]map[[32]byte]bool{} // epoch → ids requested
			for k, l := range rec.reqs {
				if asked[k.epoch] == nil {
					asked[k.epoch] = map[[32]byte]bool{}
				}
				for _, id := range l {
					asked[k.epoch][id] = true
				}
			}
			for _, tr := range trials {
				if tr.pub+2 > len(order) || !rec.ended(order[tr.pub], p.Rounds) || !rec.ended(order[tr.pub+1], p.Rounds) {
					continue
				}
				requested := asked[order[tr.pub]][tr.id] || asked[order[tr.pub+1]][tr.id]
				tl := null
				if isControl[tr.victim] {
					tl = ctl
				}
				tl.add(!requested == (tr.fetcher == tr.victim), 0.5, 0.25)
			}
			return null, ctl
		}
		null, ctl := playUntil(ctx, t, target, play)
		stop()
		mu.Lock()
		epochs := len(order)
		mu.Unlock()
		gaps, filled := 0, 0
		for _, v := range honest {
			st := clients[v].Stats()
			gaps, filled = gaps+st.IndexGaps, filled+st.IndexFilled
		}
		t.Logf("index gap, m = %d, n = %d, %d epochs: victims that fill the gap %s (%d gaps, %d filled); victims that do not (control) %s", m, n, epochs, null, gaps, filled, ctl)
		if gaps == 0 || filled != gaps {
			t.Errorf("the victims that fill gaps saw %d and filled %d: the adversary left nothing out", gaps, filled)
		}
		if float64(null.wins) > null.bound() {
			t.Errorf("the adversary tells from an index gap who fetches, above chance: %s", null)
		}
		if float64(ctl.wins) <= ctl.bound() {
			t.Errorf("control: a gap left unfilled is not exploited: %s; the adversary is broken", ctl)
		}
	})
}

// playUntil scores the epochs played so far, again and again, until both
// the null and the control tallies hold target trials (the test fails
// when ctx ends first).
func playUntil(ctx context.Context, t *testing.T, target int, play func() (null, ctl *tally)) (null, ctl *tally) {
	t.Helper()
	last := -1
	if err := wait.UntilEvery(ctx, ctxLeft(ctx), 200*time.Millisecond, func() bool {
		null, ctl = play()
		if null.trials >= target && ctl.trials >= target {
			return true
		}
		if n := min(null.trials, ctl.trials); advFull() && n/10 != last/10 {
			t.Logf("%d and %d trials of %d: %s; control %s", null.trials, ctl.trials, target, null, ctl) // full runs take hours: show progress
			last = n
		}
		return false
	}); err != nil {
		t.Fatalf("only %d and %d trials", null.trials, ctl.trials)
	}
	return null, ctl
}
