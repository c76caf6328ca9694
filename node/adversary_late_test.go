//go:build riffletest

package node

import (
	"math"
	"slices"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

// lateHold is withheldRun's "late" adversary: the corrupt servers hand a
// victim the closing record of the epoch it is in, and of the depth
// epochs before (one for the first victim, two for the second, so that
// their pools differ), only once it is further on, on the next index page
// that carries a record of its own (a page that does not move the
// client's cursor is refused, and the client would then sync from every
// server, the honest one among them). Under the old rule a client admits
// records at its epoch's start sync, so the victim's pool lacks at least
// the epoch just ended, which every other client's holds. The corrupt servers note when
// they gave each of their clients each record, and a client's first onion
// of an epoch follows its start sync, so the adversary knows each one's
// pool in each epoch (lack). All of it under withheldRun's vmu.
type lateHold struct {
	seq   [][32]byte       // epochs, in the order clients joined them
	cur   map[int][32]byte // each client's epoch
	held  map[int][][]byte // records waiting, by victim
	depth map[int]int
	gave  map[int]map[[32]byte]time.Time
}

func newLateHold() *lateHold {
	return &lateHold{cur: map[int][32]byte{}, held: map[int][][]byte{}, depth: map[int]int{}, gave: map[int]map[[32]byte]time.Time{}}
}

func (h *lateHold) joined(c int, epoch [32]byte) {
	h.cur[c] = epoch
	if !slices.Contains(h.seq, epoch) {
		h.seq = append(h.seq, epoch)
	}
}

func closingEpoch(r []byte) ([32]byte, bool) {
	var c wire.Closing
	if c.Unmarshal(r, 1<<20) != nil {
		return [32]byte{}, false
	}
	return c.Epoch, true
}

// page is what a corrupt server sends client c of recs (primary: it is
// c's primary; victim: held back as above).
func (h *lateHold) page(c int, primary, victim bool, recs [][]byte) [][]byte {
	out := recs
	if victim {
		cur := slices.Index(h.seq, h.cur[c])
		var wait [][]byte
		out = nil
		for _, r := range append(slices.Clone(h.held[c]), recs...) {
			e, ok := closingEpoch(r)
			if x := slices.Index(h.seq, e); ok && x >= 0 && x >= cur-h.depth[c] || len(recs) == 0 {
				wait = append(wait, r)
			} else {
				out = append(out, r)
			}
		}
		h.held[c] = wait
	}
	if h.gave[c] == nil {
		h.gave[c] = map[[32]byte]time.Time{}
	}
	got := out
	if !primary {
		// A sync from the other servers: the honest one gives what
		// this one has.
		got = recs
	}
	for _, r := range got {
		if e, ok := closingEpoch(r); ok {
			if _, ok := h.gave[c][e]; !ok {
				h.gave[c][e] = time.Now()
			}
		}
	}
	return out
}

// lack returns the pool by the old rule of the clients in crowd in epoch
// id (the DecoyEpochs epochs before it whose record each of them got
// before its first onion of id, at[c]), and the epochs of it that client v
// had not got before its own.
func (h *lateHold) lack(id [32]byte, v int, crowd []int, at map[int]time.Time) (pool, lack [][32]byte) {
	x := slices.Index(h.seq, id)
	if x < 0 || at[v].IsZero() {
		return nil, nil
	}
	had := func(c int, e [32]byte) bool {
		t, ok := h.gave[c][e]
		return ok && t.Before(at[c])
	}
	for _, e := range h.seq[max(0, x-DecoyEpochs):x] {
		all := true
		for _, c := range crowd {
			if !at[c].IsZero() && !had(c, e) {
				all = false
			}
		}
		if !all {
			continue
		}
		pool = append(pool, e)
		if !had(v, e) {
			lack = append(lack, e)
		}
	}
	return pool, lack
}

// fitLL is the log-likelihood of each output position's requests in
// epoch id as uniform draws over the pairs (position, id) of the lists of
// pool's epochs but lack's, an id outside pool counting nothing (not a
// decoy) and one the draws could not give log ε/|pool|. Under rec.mu.
func fitLL(rec *advRecord, id [32]byte, pool, lack [][32]byte, n int) []float64 {
	wc, w := map[[32]byte]int{}, map[[32]byte]int{}
	sc, s := 0, 0
	for _, e := range pool {
		type pair struct {
			q  int
			id [32]byte
		}
		seen := map[pair]bool{}
		for _, k := range rec.byEpoch[e] {
			for _, x := range rec.reqs[k] {
				if x == ([32]byte{}) || seen[pair{k.q, x}] {
					continue
				}
				seen[pair{k.q, x}] = true
				wc[x]++
				sc++
				if !slices.Contains(lack, e) {
					w[x]++
					s++
				}
			}
		}
	}
	const eps = 1e-3
	ll := make([]float64, n)
	for _, k := range rec.byEpoch[id] {
		if k.q >= n {
			continue
		}
		for _, x := range rec.reqs[k] {
			if x == ([32]byte{}) || wc[x] == 0 {
				continue
			}
			p := eps / float64(sc)
			if s > 0 {
				p = max(p, float64(w[x])/float64(s))
			}
			ll[k.q] += math.Log(p)
		}
	}
	return ll
}

// fitScores scores each output position of epoch id for victim v: how
// much better its requests fit the pool v held (pool but lacks[v]) than
// the best of the others, the crowd's (all of pool) and the other
// victims' where they differ. The victim scores highest. Under rec.mu.
func fitScores(rec *advRecord, id [32]byte, pool [][32]byte, lacks map[int][][32]byte, v, n int) []float64 {
	if len(lacks[v]) == 0 {
		return make([]float64, n) // held all: nothing to tell
	}
	own := fitLL(rec, id, pool, lacks[v], n)
	best := fitLL(rec, id, pool, nil, n)
	for u, l := range lacks {
		if u == v || slices.Equal(l, lacks[v]) {
			continue
		}
		for q, x := range fitLL(rec, id, pool, l, n) {
			best[q] = max(best[q], x)
		}
	}
	for q := range own {
		own[q] -= best[q]
	}
	return own
}
