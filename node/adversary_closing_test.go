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
// (§5.2, §6.3 v3): servers 0 and 1 are corrupt and leave closing records
// and pools out of the index pages and windows they send two victims
// (clients 0 and 1, whose primaries they are): with mode "all" every
// one, "late" the newest of each reply (the record one sync late, as the
// review's corrupt primary did), "partial" every other one. A client draws
// its decoys only from epochs whose record and pool it holds: a victim
// that held fewer would ask for fewer ids, and never for those only the
// withheld epochs' lists hold. The adversary guesses each victim's
// pseudonym in each epoch two ways, n = 8 choices each, ties at random:
// the one with the fewest requests in the epoch's published lists
// (fewest), and the one that asked least for the ids that only the
// withheld epochs of the epoch's window asked for (ids: the window is
// public, and so are the lists). With fill true the victims take the
// window from every chain server at once (window_client.go); with fill
// false (the positive control, OwnDecoys and NoClosingFill, switched on
// in the test only) they draw by the old rule from the records their
// primary's index pages bring. Trials are counted in epochs in which at
// least half the pseudonyms asked for something (decoys are under way);
// as in TestAdversaryLinks the variance bound is Σ p.
func withheldRun(t *testing.T, fill bool, mode string, epochs int) (fewest, byIDs *tally) {
	const m, n = 3, 8
	rec := newAdvRecord()
	p := advParams(4)
	var (
		vmu     sync.Mutex
		victims = map[peer.ID]bool{}
	)
	// The window of each epoch, as every client holds it (public: the
	// walk from the epoch's descriptor), newest first, its epochs'
	// numbers, and each epoch's number (under rec.mu).
	windows, windowNums := map[[32]byte][][32]byte{}, map[[32]byte][]uint64{}
	numOf := map[[32]byte]uint64{}
	tn := startAnonNet(t, m, 0, n, p, func(i int, c *ServerConfig) {
		o := rec.server(i)
		if i < 2 {
			o.IndexClosings = func(to peer.ID, recs [][]byte) [][]byte {
				vmu.Lock()
				defer vmu.Unlock()
				if !victims[to] {
					return recs
				}
				nums := make([]uint64, len(recs))
				rec.mu.Lock()
				for j, r := range recs {
					var c wire.Closing
					if c.Unmarshal(r, 1<<20) == nil {
						nums[j] = numOf[c.Epoch]
					}
				}
				rec.mu.Unlock()
				out := withheld(mode, nums)
				var kept [][]byte
				for j, r := range recs {
					if !out[j] {
						kept = append(kept, r)
					}
				}
				return kept
			}
			o.WindowReply = func(to peer.ID, w *wire.Window) {
				vmu.Lock()
				defer vmu.Unlock()
				if victims[to] {
					var nums []uint64
					for _, it := range w.Items {
						if it.Closing != nil {
							nums = append(nums, it.Number)
						} else {
							nums = append(nums, 0)
						}
					}
					out := withheld(mode, nums)
					for j := range w.Items {
						if out[j] {
							w.Items[j].Closing, w.Items[j].Pool = nil, nil
						}
					}
				}
			}
		}
		c.observe = o
	})
	ctx, cancel := context.WithTimeout(context.Background(), advTimeout(8*time.Minute))
	defer cancel()
	// The window of each epoch, as every client holds it (public: the
	// walk from the epoch's descriptor), newest first.
	var clients []*Client
	for i := 0; i < n; i++ {
		o := rec.client(i)
		o.OwnDecoys, o.NoClosingFill = i < 2 && !fill, i < 2 && !fill
		if i >= 2 {
			// hookWindow calls Window, then WindowAt, with the same
			// epochs in the same order.
			var last [32]byte
			var ids [][32]byte
			o.Window = func(epoch [32]byte, w [][32]byte) { last, ids = epoch, w }
			o.WindowAt = func(_ uint64, nums []uint64) {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				windows[last] = ids
				windowNums[last] = nums
				for j, id := range ids {
					numOf[id] = nums[j]
				}
			}
		}
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
	tl, ti := &tally{}, &tally{}
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
		// The ids only the withheld epochs of the window asked for.
		asked := func(e [32]byte) map[[32]byte]bool {
			out := map[[32]byte]bool{}
			for _, k := range rec.byEpoch[e] {
				for _, x := range rec.reqs[k] {
					if x != ([32]byte{}) {
						out[x] = true
					}
				}
			}
			return out
		}
		only, kept := map[[32]byte]bool{}, map[[32]byte]bool{}
		w := windows[id]
		out := withheld(mode, windowNums[id])
		for j, e := range w {
			for x := range asked(e) {
				if out[j] {
					only[x] = true
				} else {
					kept[x] = true
				}
			}
		}
		for x := range kept {
			delete(only, x)
		}
		score := make([]int, n)
		for _, k := range rec.byEpoch[id] {
			if k.q >= n {
				continue
			}
			for _, x := range rec.reqs[k] {
				if only[x] {
					score[k.q]++
				}
			}
		}
		var fit []int
		low = -1
		for q, x := range score {
			switch {
			case low < 0 || x < low:
				fit, low = []int{q}, x
			case x == low:
				fit = append(fit, q)
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
			ti.add(fit[rng.IntN(len(fit))] == truth, pn, pn)
		}
	}
	return tl, ti
}

// withheld reports which of the records of a reply, by their epochs'
// numbers (0: no record, or unknown), the corrupt servers leave out in
// mode: every one ("all"), the newest ("late"), or those of odd numbers
// ("partial").
func withheld(mode string, nums []uint64) []bool {
	out := make([]bool, len(nums))
	newest := -1
	for j, x := range nums {
		switch {
		case mode == "all":
			out[j] = true
		case mode == "partial":
			out[j] = x%2 == 1
		case x > 0 && (newest < 0 || x > nums[newest]):
			newest = j
		}
	}
	if mode == "late" && newest >= 0 {
		out[newest] = true
	}
	return out
}

// TestAdversaryWithheldRecord (§5.2, §6.3 v3): servers that withhold the
// closing records from a client, all of them, the newest one (one sync
// late) or every other one, do not single it out, by how many ids its
// pseudonym asks for or by which, since the client takes the window from
// every chain server; a client that takes its primary's records as all
// (the positive control) is linked far above chance by one score or the
// other. Only with RIFFLE_ADVERSARY=1 (12 epochs of each kind, 24
// trials), RIFFLE_LONG=1 (40 epochs) or RIFFLE_ADVERSARY_FULL=1 (100
// epochs, 200 trials).
func TestAdversaryWithheldRecord(t *testing.T) {
	virtual(t, func(t *testing.T) {
		epochs := adversaryTrials(t, 12, 40, 100)
		for _, mode := range []string{"all", "late", "partial"} {
			defF, defI := withheldRun(t, true, mode, epochs)
			ctlF, ctlI := withheldRun(t, false, mode, epochs)
			t.Logf("withheld closing records (%s), m = 3, n = 8: victims that take the window from every server: fewest requests %s, by ids %s; victims that take their primary's records as all (control): fewest %s, by ids %s", mode, defF, defI, ctlF, ctlI)
			for _, x := range []struct {
				what     string
				def, ctl *tally
			}{{"fewest", defF, ctlF}, {"by ids", defI, ctlI}} {
				if float64(x.def.wins) > x.def.bound() {
					t.Errorf("%s records withheld, %s: linked above chance: %s", mode, x.what, x.def)
				}
			}
			// The control links by at least one of the scores: with all
			// records withheld the victim asks for few ids, with some
			// withheld it never asks for theirs.
			if float64(ctlF.wins) <= ctlF.bound() && float64(ctlI.wins) <= ctlI.bound() {
				t.Errorf("%s records withheld, control: not linked by either score (fewest %s, by ids %s); the adversary is broken", mode, ctlF, ctlI)
			}
		}
	})
}
