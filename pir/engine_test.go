package pir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// randDB returns L random rows of b bytes; with short set, some rows are
// shorter than b (down to empty), as the store hands them out.
func randDB(r *rand.Rand, L, b int, short bool) SliceRows {
	db := make(SliceRows, L)
	for i := range db {
		n := b
		if short && r.IntN(3) == 0 {
			n = r.IntN(b + 1)
		}
		db[i] = make([]byte, n)
		for k := range db[i] {
			db[i][k] = byte(r.Uint32())
		}
	}
	return db
}

// randMasks returns Q masks over L rows; kind 0 random, 1 all zero, 2 all one.
func randMasks(r *rand.Rand, Q, L, kind int) [][]byte {
	ms := make([][]byte, Q)
	for q := range ms {
		m := make([]byte, MaskBytes(L))
		for k := range m {
			switch kind {
			case 0:
				m[k] = byte(r.Uint32())
			case 2:
				m[k] = 0xff
			}
		}
		clearUnused(m, L)
		ms[q] = m
	}
	return ms
}

func newOut(Q, b int, fill byte) [][]byte {
	out := make([][]byte, Q)
	for q := range out {
		out[q] = bytes.Repeat([]byte{fill}, b)
	}
	return out
}

type engineCase struct {
	L, b, Q, kind int
	short         bool
	opts          Options
}

func (c engineCase) String() string {
	return fmt.Sprintf("L%d_b%d_Q%d_k%d_s%v_g%d_w%d_G%d_n%d", c.L, c.b, c.Q, c.kind, c.short,
		c.opts.GroupBits, c.opts.SliceBytes, c.opts.BlockGroups, c.opts.Workers)
}

func engineCases() []engineCase {
	var cs []engineCase
	shapes := []struct{ L, b, Q int }{
		{1, 1, 1}, {1, 64, 3}, {1, 100, 1}, {2, 65, 5}, {7, 200, 20}, {8, 256, 8},
		{9, 333, 4}, {13, 1000, 40}, {64, 512, 17}, {100, 1500, 33}, {130, 4097, 7},
		{257, 640, 300}, {31, 70, 1},
	}
	for i, s := range shapes {
		for kind := 0; kind < 3; kind++ {
			cs = append(cs, engineCase{L: s.L, b: s.b, Q: s.Q, kind: kind, short: i%2 == 0})
		}
		// Explicit plans: every group size, slice widths that do and do not
		// divide b, one group per block, one worker.
		for g := 1; g <= 8; g++ {
			cs = append(cs, engineCase{L: s.L, b: s.b, Q: s.Q, short: true,
				opts: Options{GroupBits: g, SliceBytes: 64 * (1 + (g+i)%5), BlockGroups: 1 + g%3, Workers: 1 + g%3}})
		}
	}
	return cs
}

func testEngineMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range engineCases() {
		db := randDB(r, c.L, c.b, c.short)
		masks := randMasks(r, c.Q, c.L, c.kind)
		want := newOut(c.Q, c.b, 0)
		if err := Reference(db, c.b, masks, want); err != nil {
			t.Fatalf("%v: reference: %v", c, err)
		}
		got := newOut(c.Q, c.b, 0xa5) // stale bytes must be overwritten
		e := NewEngine(c.opts)
		for pass := 0; pass < 2; pass++ { // the second pass reuses scratch
			if err := e.Answer(db, c.b, masks, got); err != nil {
				t.Fatalf("%v: answer: %v", c, err)
			}
			for q := range got {
				if !bytes.Equal(got[q], want[q]) {
					t.Fatalf("%v pass %d: answer %d differs from the reference", c, pass, q)
				}
			}
		}
	}
}

// TestEngineMatchesReference runs the engine with every kernel this CPU
// can run (AVX-512, AVX2, portable), so one machine tests the fallbacks too.
func TestEngineMatchesReference(t *testing.T) {
	for _, k := range testKernels() {
		t.Run(k, func(t *testing.T) {
			useKernel(t, k)
			testEngineMatches(t)
		})
	}
}

// TestReferenceByHand checks the oracle itself on a case computed by hand.
func TestReferenceByHand(t *testing.T) {
	db := SliceRows{{1, 2, 3}, {4}, {0, 0, 0x10}}
	masks := [][]byte{{0b101}, {0b011}, {0}, {0b111}}
	out := newOut(4, 3, 9)
	if err := Reference(db, 3, masks, out); err != nil {
		t.Fatal(err)
	}
	want := [][]byte{{1, 2, 0x13}, {5, 2, 3}, {0, 0, 0}, {5, 2, 0x13}}
	for q := range want {
		if !bytes.Equal(out[q], want[q]) {
			t.Errorf("query %d: %x, want %x", q, out[q], want[q])
		}
	}
}

func TestEngineSizes(t *testing.T) {
	db := SliceRows{make([]byte, 10), make([]byte, 10), make([]byte, 3)}
	good := [][]byte{{0b101}}
	cases := []struct {
		name  string
		db    Rows
		b     int
		masks [][]byte
		out   [][]byte
		want  error
	}{
		{"mask too long", db, 10, [][]byte{{1, 0}}, newOut(1, 10, 0), ErrSize},
		{"mask too short", db, 10, [][]byte{{}}, newOut(1, 10, 0), ErrSize},
		{"bits beyond L", db, 10, [][]byte{{0b1000}}, newOut(1, 10, 0), ErrMask},
		{"row longer than b", db, 9, good, newOut(1, 9, 0), ErrSize},
		{"answer of wrong size", db, 10, good, newOut(1, 11, 0), ErrSize},
		{"fewer answers than masks", db, 10, good, nil, ErrSize},
		{"empty database", SliceRows{}, 10, [][]byte{{}}, newOut(1, 10, 0), ErrSize},
		{"zero b", SliceRows{{}}, 0, [][]byte{{0}}, newOut(1, 0, 0), ErrSize},
	}
	e := NewEngine(Options{})
	for _, c := range cases {
		for name, f := range map[string]func() error{
			"reference": func() error { return Reference(c.db, c.b, c.masks, c.out) },
			"engine":    func() error { return e.Answer(c.db, c.b, c.masks, c.out) },
		} {
			if err := f(); !errors.Is(err, c.want) {
				t.Errorf("%s, %s: got %v, want %v", c.name, name, err, c.want)
			}
		}
	}
	if err := e.Answer(db, 10, good, newOut(1, 10, 0)); err != nil {
		t.Errorf("valid call: %v", err)
	}
}

// TestAnswerContext: a round whose deadline has passed stops with the
// context's error, and the same engine then answers the next round right.
func TestAnswerContext(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	db := randDB(r, 40, 4096, true)
	masks := randMasks(r, 10, 40, 0)
	e := NewEngine(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.AnswerContext(ctx, db, 4096, masks, newOut(10, 4096, 0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled round: %v, want %v", err, context.Canceled)
	}
	want, got := newOut(10, 4096, 0), newOut(10, 4096, 0)
	if err := Reference(db, 4096, masks, want); err != nil {
		t.Fatal(err)
	}
	if err := e.Answer(db, 4096, masks, got); err != nil {
		t.Fatal(err)
	}
	for q := range got {
		if !bytes.Equal(got[q], want[q]) {
			t.Fatalf("answer %d after a cancelled round differs from the reference", q)
		}
	}
}
