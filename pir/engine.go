package pir

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
)

// Rows is a round's PIR database (§5.3): L rows, row i being the i-th listed
// chunk. A row shorter than b stands for itself followed by zeros to b bytes,
// so a store can hand out its chunks of `length` bytes (for instance slices of
// bbolt's memory map) without copying. Row must be safe for concurrent calls
// and the bytes must not change during Answer.
type Rows interface {
	Len() int
	Row(i int) []byte
}

// SliceRows is a Rows held in memory.
type SliceRows [][]byte

// Len returns the number of rows.
func (s SliceRows) Len() int { return len(s) }

// Row returns row i.
func (s SliceRows) Row(i int) []byte { return s[i] }

// XorInto sets dst[i] ^= src[i] for i < len(src); src must not be longer than
// dst.
func XorInto(dst, src []byte) {
	if len(src) > len(dst) {
		panic(fmt.Sprintf("pir: XorInto of %d bytes into %d", len(src), len(dst)))
	}
	subtle.XORBytes(dst[:len(src)], dst[:len(src)], src)
}

// check validates one round's call and returns its rows: L ≥ 1 rows of at most
// b bytes, one mask of MaskBytes(L) canonical bytes per answer buffer of b
// bytes.
func check(db Rows, b int, masks, out [][]byte) ([][]byte, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: no database", ErrSize)
	}
	L := db.Len()
	if L < 1 {
		return nil, fmt.Errorf("%w: database of %d rows, need at least 1", ErrSize, L)
	}
	if b < 1 || b > maxStream {
		return nil, fmt.Errorf("%w: row size %d out of range [1, %d]", ErrSize, b, maxStream)
	}
	if len(masks) != len(out) {
		return nil, fmt.Errorf("%w: %d masks but %d answer buffers", ErrSize, len(masks), len(out))
	}
	for q, m := range masks {
		if err := CheckMask(m, L); err != nil {
			return nil, fmt.Errorf("pir: query %d: %w", q, err)
		}
		if len(out[q]) != b {
			return nil, fmt.Errorf("%w: answer buffer %d of %d bytes, want b = %d", ErrSize, q, len(out[q]), b)
		}
	}
	rows := make([][]byte, L)
	for i := range rows {
		r := db.Row(i)
		if len(r) > b {
			return nil, fmt.Errorf("%w: row %d of %d bytes exceeds b = %d", ErrSize, i, len(r), b)
		}
		rows[i] = r
	}
	return rows, nil
}

// Reference answers every query the plain way of the published prototype:
// for each query, XOR every row whose mask bit is set into its answer. It is
// serial and memory-bound (it streams the database once per query); it is
// kept as the tests' oracle and the benchmarks' baseline.
func Reference(db Rows, b int, masks, out [][]byte) error {
	rows, err := check(db, b, masks, out)
	if err != nil {
		return err
	}
	for q, m := range masks {
		clear(out[q])
		for i, r := range rows {
			if m[i/8]>>(i%8)&1 == 1 {
				XorInto(out[q], r)
			}
		}
	}
	return nil
}

// Options tune an Engine; the zero value picks everything by measurement
// and by the shape of the round.
type Options struct {
	// Workers is the number of goroutines answering in parallel
	// (0: GOMAXPROCS).
	Workers int
	// GroupBits is the four-Russians group size g, 1..8: the engine builds
	// 2^g combinations per g rows (0: chosen from Q and L).
	GroupBits int
	// SliceBytes is the width of a column slice, a multiple of 64 (0: auto).
	SliceBytes int
	// BlockGroups is the number of groups whose tables are live at once
	// (0: auto, from a cache budget).
	BlockGroups int
	// Logger receives debug lines about the chosen plan (nil: quiet).
	Logger *slog.Logger
}

// Cache budget of the tables of one block, per worker: an eighth of a 1 MiB
// L2, so that the tables and the queries' accumulators, streaming past, stay
// cached together. Measured: 64–256 KiB are within a few percent.
const tableBudget = 128 << 10

// sliceRun is how many bytes of columns a worker takes at a time: long
// enough that the rows stream in runs the prefetcher follows.
const sliceRun = 4 << 10

// defaultSlice is the slice width w: 256 bytes, four AVX-512 registers of
// accumulator; measured best at Q = L ∈ {200, 512, 1000}.
const defaultSlice = 256

// genericSlice is w for the portable kernels, which make one crypto/subtle
// call per entry: wider slices amortise the calls (measured 1.5× faster
// than 256 at Q = L = 200; 2048 was no better at Q = L = 512 and puts the
// accumulators of 1000 queries beyond a 1 MiB L2).
const genericSlice = 1024

// Engine answers all queries of a round in one pass (§6.3, §9). An Engine
// keeps its scratch memory between rounds; Answer calls on one Engine are
// serialised.
type Engine struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	idx     []byte    // group indices, query-major: idx[q*nGroups+j]
	workers []*worker // per-goroutine scratch
}

type worker struct {
	tab  []byte   // BlockGroups tables of 2^g entries of w bytes
	pad  []byte   // zero-padded copies of short row segments, g·w
	segs [][]byte // the current group's row segments
	acc  []byte   // the queries' accumulators for one slice: Q·w
}

// plan is the blocking of one round.
type plan struct {
	g, G, w int // group bits, groups per block, slice width
	nGroups int
}

// NewEngine returns an engine.
func NewEngine(opts Options) *Engine {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{opts: opts, log: log}
}

// choose picks the blocking for Q queries over L rows of b bytes.
func (e *Engine) choose(Q, L, b int) plan {
	p := plan{g: e.opts.GroupBits, w: e.opts.SliceBytes, G: e.opts.BlockGroups}
	if p.g < 1 || p.g > 8 {
		// Work per row and per slice, in units of w bytes: building a table
		// writes 2^g entries (two loads and a store each, and the stores
		// evict: weighted 4 by measurement), and each query loads one entry
		// per group, all shared by g rows. This picks g = 5 at Q = 200 and
		// g = 6 at Q = 1000, the measured optima (docs/bench/pir.md).
		best := 0.0
		for g := 1; g <= 8; g++ {
			c := float64(4<<g+Q) / float64(g)
			if p.g == 0 || c < best {
				p.g, best = g, c
			}
		}
	}
	if p.g > L {
		p.g = L
	}
	if p.w < 64 || p.w%64 != 0 {
		p.w = defaultSlice
		if kernelName() == "generic" {
			p.w = genericSlice
		}
	}
	if p.w > roundUp(b, 64) {
		p.w = roundUp(b, 64)
	}
	p.nGroups = (L + p.g - 1) / p.g
	if p.G < 1 {
		p.G = max(1, tableBudget/((1<<p.g)*p.w))
	}
	p.G = min(p.G, p.nGroups)
	return p
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// Answer sets out[q] to the XOR of the rows of db selected by masks[q], for
// every q, with b the epoch's row size. It gives exactly Reference's bytes.
func (e *Engine) Answer(db Rows, b int, masks, out [][]byte) error {
	return e.AnswerContext(context.Background(), db, b, masks, out)
}

// AnswerContext is Answer that gives up between column slices once ctx is
// done (the round's deadline passed); out is then unspecified.
func (e *Engine) AnswerContext(ctx context.Context, db Rows, b int, masks, out [][]byte) error {
	rows, err := check(db, b, masks, out)
	if err != nil {
		return err
	}
	Q, L := len(masks), len(rows)
	if Q == 0 {
		return nil
	}
	p := e.choose(Q, L, b)
	nw := e.opts.Workers
	if nw < 1 {
		nw = runtime.GOMAXPROCS(0)
	}
	nSlices := (b + p.w - 1) / p.w
	nw = min(nw, nSlices)
	e.log.Debug("pir answer", "queries", Q, "rows", L, "b", b, "group_bits", p.g,
		"block_groups", p.G, "slice", p.w, "workers", nw)

	e.mu.Lock()
	defer e.mu.Unlock()
	e.indices(p, masks, L)
	for len(e.workers) < nw {
		e.workers = append(e.workers, &worker{})
	}
	// Workers take runs of slices from a shared counter rather than fixed
	// halves: on a server whose other work (mixing, network) takes a core
	// now and then, a fixed split would wait for the slowed half.
	var next atomic.Int64
	step := max(1, min(sliceRun/p.w, nSlices/(4*nw)))
	var wg sync.WaitGroup
	errs := make([]error, nw)
	for k := 0; k < nw; k++ {
		wk := e.workers[k]
		wk.prepare(p, Q)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(step))) - step
				if lo >= nSlices {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[k] = fmt.Errorf("pir: answer stopped at slice %d of %d: %w", lo, nSlices, err)
					return
				}
				for s := lo; s < min(lo+step, nSlices); s++ {
					wk.slice(p, rows, e.idx, out, s*p.w)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// indices extracts, for every query and group, the g mask bits of the group:
// bits j·g .. j·g+g-1, LSB first, as the index of the table entry.
func (e *Engine) indices(p plan, masks [][]byte, L int) {
	n := len(masks) * p.nGroups
	if cap(e.idx) < n {
		e.idx = make([]byte, n)
	}
	e.idx = e.idx[:n]
	for q, m := range masks {
		row := e.idx[q*p.nGroups : (q+1)*p.nGroups]
		for j := range row {
			bit := j * p.g
			v := uint(m[bit/8])
			if bit/8+1 < len(m) {
				v |= uint(m[bit/8+1]) << 8
			}
			row[j] = byte(v >> (bit % 8) & (1<<p.g - 1))
		}
	}
}

// prepare sizes the worker's scratch for plan p, reusing earlier buffers.
func (wk *worker) prepare(p plan, Q int) {
	grow := func(b []byte, n int) []byte {
		if cap(b) < n {
			return make([]byte, n)
		}
		return b[:n]
	}
	wk.tab = grow(wk.tab, p.G<<p.g*p.w)
	wk.pad = grow(wk.pad, p.g*p.w)
	if cap(wk.segs) < p.g {
		wk.segs = make([][]byte, p.g)
	}
	wk.segs = wk.segs[:p.g]
	wk.acc = grow(wk.acc, Q*p.w)
}

// slice answers every query on the columns [off, off+w) of the database.
// The accumulators are the worker's contiguous buffer, Q·w bytes, rather
// than the scattered answer buffers: they then stream through the cache and
// the TLB in order, and are copied out once per slice.
func (wk *worker) slice(p plan, rows [][]byte, idx []byte, out [][]byte, off int) {
	w := p.w
	L := len(rows)
	tstride := w << p.g
	for j0 := 0; j0 < p.nGroups; j0 += p.G {
		nb := min(p.G, p.nGroups-j0)
		// Build the block's tables: table t holds all 2^g XOR combinations
		// of the slice of rows (j0+t)·g .. (j0+t)·g+g-1.
		for t := 0; t < nb; t++ {
			r0 := (j0 + t) * p.g
			gr := min(p.g, L-r0)
			segs := wk.segs[:gr]
			for k := range segs {
				segs[k] = wk.segment(rows[r0+k], off, w, k)
			}
			buildTable(wk.tab[t*tstride:(t+1)*tstride], segs, w)
		}
		// One XOR per group per query.
		gatherXOR(wk.acc, len(out), wk.tab, tstride, idx[j0:], p.nGroups, nb, p.g, w, j0 == 0)
	}
	for q := range out {
		copy(out[q][off:], wk.acc[q*w:(q+1)*w])
	}
}

// segment returns row[off:off+w], or a zero-padded copy of what the row has
// there when it is shorter.
func (wk *worker) segment(row []byte, off, w, k int) []byte {
	if off+w <= len(row) {
		return row[off : off+w]
	}
	buf := wk.pad[k*w : (k+1)*w]
	n := 0
	if off < len(row) {
		n = copy(buf, row[off:])
	}
	clear(buf[n:])
	return buf
}

// buildTable fills tab[e·w:(e+1)·w], for e < 2^len(segs), with the XOR of the
// segments whose bit is set in e, by doubling: the upper half of each step is
// the lower half XOR the next segment.
func buildTable(tab []byte, segs [][]byte, w int) {
	clear(tab[:w])
	for k, s := range segs {
		n := w << k
		xorBroadcast(tab[n:2*n], tab[:n], s)
	}
}
