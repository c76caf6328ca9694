//go:build riffletest

package node

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// The linking adversary (docs/anonymity.md, "How it is tested"). Real
// epochs run with m = 3 servers and n = 8 clients; every server carries an
// observer (observe.go) that records what it sees, and every client
// records the ground truth (its pseudonym, the rows it queried). For each
// choice of the honest server (first, middle, last in the chain) the
// adversary gets the observers of the other two only, and plays passive
// strategies:
//
//   - sender: for each client and epoch, guess its output position
//     (pseudonym) from its input slot, n choices;
//   - receiver: for each client, round and request slot, guess the row
//     it fetched from the masks, L choices.
//
// Passive corrupt servers run the same code as honest ones, so one
// recording serves every honest position: only what the adversary is
// given changes. The positive control gives it every server's observer;
// it must then link (almost) every trial, which shows that the records
// are the real data flow and the strategies work.
//
// Independence (what the bound assumes): every epoch has a fresh
// permutation at every server and every round fresh masks. Trials of one
// epoch share the honest server's permutation; each strategy's successes
// in an epoch are then like the fixed points of a random permutation
// (mean 1, variance 1), so the variance is bounded by Σ p rather than
// Σ p(1−p). Receiver trials use fresh masks each and are independent.

// advRecord is everything the observers and the clients recorded.
type advRecord struct {
	mu     sync.Mutex
	perm   map[[32]byte]map[int][]int        // epoch → chain position → forward
	pseud  map[[32]byte][][]byte             // epoch → pseudonyms by output position
	masks  map[maskKey]map[int][]byte        // → server index → mask
	maskL  map[maskKey]int                   // → L
	arrive map[[32]byte]map[uint32]time.Time // epoch → slot → round 0 arrival
	joined map[[32]byte]map[int]joinTruth    // epoch → client → slot, pseudonym
	rows   map[rowKey][2]int                 // → row, L
	reqs   map[reqKey][][32]byte             // published requests by output position
	// byEpoch lists reqs' keys by epoch: scans of one epoch over all of
	// reqs grew with the square of the epochs, hours at R = 256.
	byEpoch map[[32]byte][]reqKey
	// listed holds the rounds whose lists were recorded: ended, which
	// tests poll every 100 ms for each epoch, scanned byEpoch.
	listed map[epochRound]bool
}

type epochRound struct {
	epoch [32]byte
	r     uint32
}

type reqKey struct {
	epoch [32]byte
	r     uint32
	q     int
}

type maskKey struct {
	epoch   [32]byte
	r, slot uint32
	t       int
}

type rowKey struct {
	epoch  [32]byte
	client int
	r      uint32
	t      int
}

type joinTruth struct {
	slot uint32
	p    []byte
}

func newAdvRecord() *advRecord {
	return &advRecord{perm: map[[32]byte]map[int][]int{}, pseud: map[[32]byte][][]byte{}, masks: map[maskKey]map[int][]byte{},
		maskL: map[maskKey]int{}, arrive: map[[32]byte]map[uint32]time.Time{}, joined: map[[32]byte]map[int]joinTruth{}, rows: map[rowKey][2]int{}, reqs: map[reqKey][][32]byte{},
		byEpoch: map[[32]byte][]reqKey{}, listed: map[epochRound]bool{}}
}

func (a *advRecord) server(i int) *testObserver {
	return &testObserver{
		Perm: func(epoch [32]byte, pos int, fwd []int) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.perm[epoch] == nil {
				a.perm[epoch] = map[int][]int{}
			}
			a.perm[epoch][pos] = fwd
		},
		Pseudonyms: func(epoch [32]byte, ps [][]byte) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.pseud[epoch] = ps
		},
		Mask: func(epoch [32]byte, r, slot uint32, t int, mask []byte, L int) {
			a.mu.Lock()
			defer a.mu.Unlock()
			k := maskKey{epoch, r, slot, t}
			if a.masks[k] == nil {
				a.masks[k] = map[int][]byte{}
			}
			a.masks[k][i] = append([]byte(nil), mask...)
			a.maskL[k] = L
		},
		Requests: func(epoch [32]byte, r uint32, q int, ids [][32]byte) {
			a.mu.Lock()
			defer a.mu.Unlock()
			k := reqKey{epoch, r, q}
			if _, ok := a.reqs[k]; !ok {
				a.byEpoch[epoch] = append(a.byEpoch[epoch], k)
			}
			a.listed[epochRound{epoch, r}] = true
			a.reqs[k] = append([][32]byte(nil), ids...)
		},
		Submit: func(epoch [32]byte, r, slot uint32, at time.Time) {
			if r != 0 {
				return
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.arrive[epoch] == nil {
				a.arrive[epoch] = map[uint32]time.Time{}
			}
			if _, ok := a.arrive[epoch][slot]; !ok {
				a.arrive[epoch][slot] = at
			}
		},
	}
}

func (a *advRecord) client(i int) *ClientObserver {
	return &ClientObserver{
		Joined: func(epoch [32]byte, slot uint32, p []byte) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.joined[epoch] == nil {
				a.joined[epoch] = map[int]joinTruth{}
			}
			a.joined[epoch][i] = joinTruth{slot, p}
		},
		Row: func(epoch [32]byte, r uint32, t, row, L int) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.rows[rowKey{epoch, i, r, t}] = [2]int{row, L}
		},
	}
}

// tally counts one strategy's successes against chance.
type tally struct {
	trials, wins int
	mean, vari   float64 // Σ p and the variance bound of the null
	// fixed: the trials are every client of each epoch, whose successes
	// are the fixed points of the honest server's permutation (bound).
	fixed bool
}

func (t *tally) add(win bool, p float64, varBound float64) {
	t.trials++
	if win {
		t.wins++
	}
	t.mean += p
	t.vari += varBound
}

// zTail is the normal law's tail beyond 4 standard deviations: the
// chance that a bound lets a null run fail.
const zTail = 3.167e-5

// bound is the upper limit of successes under the null, at z = 4: chance
// plus 4 standard deviations (the variance Σ p(1−p) of independent coins,
// or Σ p where trials share an epoch). Where every client of an epoch is
// a trial (fixed) the successes are a sum of fixed-point counts,
// Poisson-like and skewed at tens of epochs, and the normal limit
// understates their tail: 16 epochs of 8 pass it with probability
// 1.3·10⁻⁴, not 3·10⁻⁵ (TestTallyBound), and one run of
// TestAdversaryLinks failed so (34 of 136 at a limit of 33.5). There the
// limit is the Poisson(Σ p) quantile of the same tail. Tests of a few
// independent trials keep the normal limit: the Poisson quantile of 6
// trials at 1/8 is 6, which no control can pass.
func (t *tally) bound() float64 {
	b := t.mean + 4*math.Sqrt(t.vari)
	if t.fixed && t.mean > 0 {
		b = math.Max(b, poissonBound(t.mean, zTail))
	}
	return b
}

// poissonBound is the least k with P(X > k) ≤ tail for X ~ Poisson(lam).
func poissonBound(lam, tail float64) float64 {
	top := int(lam + 20*math.Sqrt(lam) + 50)
	sum := 0.0 // P(X > k) as k falls
	for k := top; k >= 0; k-- {
		if sum > tail {
			return float64(k + 1)
		}
		lg, _ := math.Lgamma(float64(k + 1))
		sum += math.Exp(-lam + float64(k)*math.Log(lam) - lg)
	}
	return 0
}

func (t *tally) String() string {
	if t.trials == 0 {
		return "no trials"
	}
	return fmt.Sprintf("%d/%d = %.3f (chance %.3f, z=4 bound %.3f)", t.wins, t.trials, float64(t.wins)/float64(t.trials),
		t.mean/float64(t.trials), t.bound()/float64(t.trials))
}

// adversaryTrials is how many trials (or epochs, in the test's own unit)
// an adversary test that runs whole networks for minutes plays: short with
// RIFFLE_ADVERSARY=1, long with RIFFLE_LONG=1, full (at least 200 trials,
// at advParams' default R and k) with RIFFLE_ADVERSARY_FULL=1; without
// any it skips the test.
//
// RIFFLE_ADVERSARY_TRIALS=N, with RIFFLE_ADVERSARY_FULL=1, plays N in
// place of full: what one trial costs at the defaults, or as many as fit.
func adversaryTrials(t *testing.T, short, long, full int) int {
	t.Helper()
	switch {
	case advFull():
		if n, err := strconv.Atoi(os.Getenv("RIFFLE_ADVERSARY_TRIALS")); err == nil && n > 0 {
			return n
		}
		return full
	case os.Getenv("RIFFLE_LONG") != "":
		return long
	case os.Getenv("RIFFLE_ADVERSARY") != "":
		return short
	}
	t.Skip("RIFFLE_ADVERSARY=1, RIFFLE_LONG=1 or RIFFLE_ADVERSARY_FULL=1 runs it")
	return 0
}

// advFull reports whether RIFFLE_ADVERSARY_FULL=1 (make adversary) asks
// for the default R and k and at least 200 trials a strategy.
func advFull() bool { return os.Getenv("RIFFLE_ADVERSARY_FULL") != "" }

// advParams are the parameters of every adversary test: testParams(R)
// (R small, k = 2, so that a run takes minutes), or with
// RIFFLE_ADVERSARY_FULL=1 the defaults' R = 256 and k = 1, the two that
// shape what an adversary sees of the lists, and chunks of 1 KiB: the
// tests size their files in chunks and the network has no bandwidth, so
// b changes no chunk count, id or virtual time, only the CPU a round's
// payloads and answers cost (a sixth of a run's at 16 KiB).
func advParams(R int) Params {
	p := testParams(R)
	if advFull() {
		d := DefaultParams()
		p.Rounds, p.K, p.ChunkSize = d.Rounds, d.K, 1<<10
	}
	return p
}

// advTimeout is an adversary test's deadline: d, or long enough for 200
// trials of 256 rounds with RIFFLE_ADVERSARY_FULL=1. It is virtual time,
// which costs nothing while the network works.
func advTimeout(d time.Duration) time.Duration {
	if advFull() {
		return 100 * d
	}
	return d
}

// checkLinks fails t when the defended run links above its bound, or the
// positive control does not (then the adversary is broken and the first
// result means nothing).
func checkLinks(t *testing.T, what string, def, ctl *tally) {
	t.Helper()
	if float64(def.wins) > def.bound() {
		t.Errorf("%s: linked above chance: %s", what, def)
	}
	if float64(ctl.wins) <= ctl.bound() || math.IsNaN(ctl.bound()) {
		t.Errorf("%s, control: not linked: %s; the adversary is broken", what, ctl)
	}
}

// ctxLeft is the time ctx has left, an hour if it has no deadline: the
// timeout of a wait that ctx bounds.
func ctxLeft(ctx context.Context) time.Duration {
	if end, ok := ctx.Deadline(); ok {
		return time.Until(end)
	}
	return time.Hour
}

// waitCount polls have until it reaches want; the test fails when ctx
// ends first.
func waitCount(ctx context.Context, t *testing.T, what string, want int, have func() int) {
	t.Helper()
	last := -1
	if err := wait.UntilEvery(ctx, ctxLeft(ctx), 100*time.Millisecond, func() bool {
		n := have()
		if n >= want {
			return true
		}
		if advFull() && n/10 != last/10 {
			t.Logf("%d %s of %d", n, what, want) // full runs take hours: show progress
		}
		last = n
		return false
	}); err != nil {
		t.Fatalf("%d %s of %d", last, what, want)
	}
}

// senderGuess plays a sender strategy for the client at input slot, with
// the permutations of the corrupt chain positions: known steps are
// followed, the honest step is guessed by step(p).
func senderGuess(perm map[int][]int, m, slot int, corrupt func(int) bool, step func(p int) int) int {
	p := slot
	for s := 0; s < m; s++ {
		if corrupt(s) {
			p = perm[s][p]
		} else {
			p = step(p)
		}
	}
	return p
}

// receiverGuess XORs the masks the adversary holds and takes a uniformly
// random set bit among the L rows (a uniformly random row when none is
// set): with every mask, the XOR is the row's unit vector.
func receiverGuess(masks [][]byte, L int, rng *rand.Rand) int {
	if len(masks) == 0 {
		return rng.IntN(L)
	}
	x := make([]byte, len(masks[0]))
	for _, mk := range masks {
		for i := range x {
			x[i] ^= mk[i]
		}
	}
	var set []int
	for i := 0; i < L; i++ {
		if x[i/8]>>(i%8)&1 == 1 {
			set = append(set, i)
		}
	}
	if len(set) == 0 {
		return rng.IntN(L)
	}
	return set[rng.IntN(len(set))]
}

// TestAdversaryLinks runs the passive linking adversary with the honest
// server first, in the middle and last, and the positive control with no
// honest server. RIFFLE_LONG=1 runs more epochs, RIFFLE_ADVERSARY_FULL=1
// the default R and k (with RIFFLE_ADVERSARY_TRIALS=N, N epochs: what an
// epoch at the defaults costs).
func TestAdversaryLinks(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		const m, n = 3, 8
		// 16 epochs: 128 sender trials, so that a tripled success rate
		// (3/n) shows at z = 4 (mean 48 against a bound of 36).
		epochs, minTrials := 16, 100
		switch {
		case advFull(): // 200 sender trials a position at R = 256, k = 1
			epochs, minTrials = 25, 200
			if e := adversaryTrials(t, 0, 0, 0); e > 0 { // RIFFLE_ADVERSARY_TRIALS: epochs
				// What an epoch costs: too few epochs to ask for
				// trials (the first ones may hold no receiver trial).
				epochs, minTrials = e, 0
			}
		case os.Getenv("RIFFLE_LONG") != "":
			epochs, minTrials = 64, 400
		case testing.Short():
			epochs, minTrials = 5, 30
		}
		rec := newAdvRecord()
		p := advParams(4)
		tn := startAnonNet(t, m, 0, n, p, func(i int, c *ServerConfig) { c.observe = rec.server(i) })
		ctx, cancel := context.WithTimeout(context.Background(), advTimeout(10*time.Minute))
		defer cancel()
		var clients []*Client
		for i := 0; i < n; i++ {
			c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: rec.client(i)}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clients = append(clients, c)
		}
		// Demand for rows: one client shares a file of a few chunks, three
		// fetch it; decoys keep the lists filled afterwards.
		link, err := clients[0].Share(ctx, bytes.NewReader(anonRand(t, 5*int(p.ChunkSize))), "demand.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := 1; i <= 3; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := clients[i].Get(ctx, link, t.TempDir()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		// Run until enough complete epochs are recorded.
		complete := func() [][32]byte {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var out [][32]byte
			for id, j := range rec.joined {
				if len(j) == n && len(rec.perm[id]) == m && rec.pseud[id] != nil {
					out = append(out, id)
				}
			}
			return out
		}
		if err := wait.UntilEvery(ctx, advTimeout(10*time.Minute), 100*time.Millisecond, func() bool { return len(complete()) >= epochs+1 }); err != nil {
			t.Fatalf("only %d complete epochs", len(complete()))
		}
		for _, c := range clients {
			c.Close()
		}
		ids := complete()
		chain := tn.servers[0].chain()
		posOf := map[int]int{} // server index → chain position
		for i, s := range tn.servers {
			for j, pid := range chain {
				if pid == s.ID() {
					posOf[i] = j
				}
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		rec.mu.Lock()
		defer rec.mu.Unlock()
		type result struct {
			name                   string
			sender, ident, arrival tally
			receiver               tally
		}
		var results []result
		for _, honest := range []int{0, 1, 2, -1} { // -1: every server corrupt
			corrupt := func(pos int) bool { return pos != honest }
			res := result{name: map[int]string{0: "honest first", 1: "honest middle", 2: "honest last", -1: "control (none honest)"}[honest]}
			res.sender.fixed, res.ident.fixed, res.arrival.fixed = true, true, true
			for _, id := range ids {
				perm, ps := rec.perm[id], rec.pseud[id]
				// Arrival rank of each slot's first submission: what a
				// global observer sees of the clients' sends.
				var order []uint32
				for sl := range rec.arrive[id] {
					order = append(order, sl)
				}
				sort.Slice(order, func(a, b int) bool { return rec.arrive[id][order[a]].Before(rec.arrive[id][order[b]]) })
				rank := map[int]int{}
				for r, sl := range order {
					rank[int(sl)] = r
				}
				for _, j := range rec.joined[id] {
					truth := -1
					for q, pq := range ps {
						if bytes.Equal(pq, j.p) {
							truth = q
						}
					}
					if truth < 0 {
						t.Fatalf("epoch %x: a client's pseudonym is not in the published list", id[:4])
					}
					pn := 1 / float64(n)
					g := senderGuess(perm, m, int(j.slot), corrupt, func(int) int { return rng.IntN(n) })
					res.sender.add(g == truth, pn, pn)
					g = senderGuess(perm, m, int(j.slot), corrupt, func(p int) int { return p })
					res.ident.add(g == truth, pn, pn)
					g = senderGuess(perm, m, int(j.slot), corrupt, func(p int) int {
						if r, ok := rank[p]; ok {
							return r
						}
						return rng.IntN(n)
					})
					res.arrival.add(g == truth, pn, pn)
				}
			}
			for k, rl := range rec.rows {
				j, ok := rec.joined[k.epoch][k.client]
				if !ok || rl[1] < 2 {
					continue
				}
				mk := maskKey{k.epoch, k.r, j.slot, k.t}
				all := rec.masks[mk]
				if len(all) != m || rec.maskL[mk] != rl[1] {
					continue // a round whose answers were not all computed
				}
				var held [][]byte
				for si, mask := range all {
					if corrupt(posOf[si]) {
						held = append(held, mask)
					}
				}
				pr := 1 / float64(rl[1])
				res.receiver.add(receiverGuess(held, rl[1], rng) == rl[0], pr, pr*(1-pr))
			}
			results = append(results, res)
		}
		var report strings.Builder
		for _, r := range results {
			fmt.Fprintf(&report, "%s:\n  sender, random at the honest step: %s\n  sender, honest step as identity: %s\n  sender, arrival order: %s\n  receiver, XOR of held masks: %s\n",
				r.name, &r.sender, &r.ident, &r.arrival, &r.receiver)
		}
		t.Logf("%d epochs, m = %d, n = %d\n%s", len(ids), m, n, report.String())
		for _, r := range results[:3] {
			for name, tl := range map[string]*tally{"sender random": &r.sender, "sender identity": &r.ident, "sender arrival": &r.arrival, "receiver": &r.receiver} {
				if tl.trials < minTrials {
					t.Fatalf("%s, %s: only %d trials", r.name, name, tl.trials)
				}
				if float64(tl.wins) > tl.bound() {
					t.Errorf("%s, %s: the adversary links above chance: %s", r.name, name, tl)
				}
			}
		}
		ctl := results[3]
		for name, tl := range map[string]*tally{"sender": &ctl.sender, "receiver": &ctl.receiver} {
			if float64(tl.wins) < 0.9*float64(tl.trials) {
				t.Errorf("positive control, %s: only %s; the adversary or the records are broken", name, tl)
			}
		}
	})
}

// TestTallyBound: the limits against the Poisson law's quantiles, and
// against the exact law of TestAdversaryLinks' null (each epoch's
// successes are the fixed points of a uniform permutation of n): for 4 to
// 64 epochs of 8 the normal limit is passed more often than z = 4 allows
// and the bound is not.
func TestTallyBound(t *testing.T) {
	for _, c := range []struct{ lam, want float64 }{{1, 7}, {17, 36}, {26, 49}, {100, 142}} {
		if got := poissonBound(c.lam, zTail); got != c.want {
			t.Errorf("poissonBound(%v) = %v, want %v", c.lam, got, c.want)
		}
	}
	coins := tally{mean: 50, vari: 25}
	if got := coins.bound(); got != 70 {
		t.Errorf("independent coins: bound %v, want 70", got)
	}
	const n = 8
	// one[k]: the chance that a uniform permutation of n fixes k points,
	// C(n, k)·D(n−k)/n! with D the derangement numbers.
	der := []float64{1, 0}
	for i := 2; i <= n; i++ {
		der = append(der, float64(i-1)*(der[i-1]+der[i-2]))
	}
	fact := func(k int) float64 {
		f := 1.0
		for i := 2; i <= k; i++ {
			f *= float64(i)
		}
		return f
	}
	one := make([]float64, n+1)
	for k := range one {
		one[k] = der[n-k] / (fact(k) * fact(n-k))
	}
	sum := []float64{1}
	for epochs := 1; epochs <= 64; epochs++ {
		next := make([]float64, len(sum)+n)
		for a, pa := range sum {
			for b, pb := range one {
				next[a+b] += pa * pb
			}
		}
		sum = next
		if epochs < 4 || epochs&(epochs-1) != 0 {
			continue
		}
		over := func(b float64) (p float64) {
			for k, pk := range sum {
				if float64(k) > b {
					p += pk
				}
			}
			return p
		}
		tl := tally{fixed: true}
		for range epochs * n {
			tl.add(false, 1.0/n, 1.0/n)
		}
		normal := tl.mean + 4*math.Sqrt(tl.vari)
		if p := over(normal); p <= zTail {
			t.Errorf("%d epochs: the normal limit %.1f is passed with probability %.1e, within z = 4's; the Poisson bound is not needed", epochs, normal, p)
		}
		if p := over(tl.bound()); p > zTail {
			t.Errorf("%d epochs: the bound %.0f is passed with probability %.1e > %.1e", epochs, tl.bound(), p, zTail)
		}
	}
}
