package pir

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// naiveGather is gatherXOR's specification, one byte at a time.
func naiveGather(acc []byte, nq int, tab []byte, tstride int, idx []byte, idxStride, n, w int, init bool) {
	for q := 0; q < nq; q++ {
		for c := 0; c < w; c++ {
			var v byte
			if !init {
				v = acc[q*w+c]
			}
			for j := 0; j < n; j++ {
				v ^= tab[j*tstride+int(idx[q*idxStride+j])*w+c]
			}
			acc[q*w+c] = v
		}
	}
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// TestKernels checks both inner loops, at every kernel level this CPU can
// run, the dispatching one (assembly on amd64 with AVX-512 or AVX2) and the
// portable one called directly, against a
// byte-at-a-time specification, on widths that are and are not multiples
// of the assembly's 256- and 64-byte steps, and on tables with spare room
// between them (tstride > w·2^g).
func TestKernels(t *testing.T) {
	if testing.Short() {
		// Kernels against the generic code on one goroutine: nothing
		// for the race pass (-short), where it took 21 s; the full pass
		// runs it.
		t.Skip("one goroutine's arithmetic: the full pass runs it")
	}
	for _, k := range testKernels() {
		t.Run(k, func(t *testing.T) {
			useKernel(t, k)
			testKernels1(t)
		})
	}
}

func testKernels1(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	type gatherFn func(acc []byte, nq int, tab []byte, tstride int, idx []byte, idxStride, n, g, w int, init bool)
	impls := map[string]gatherFn{"dispatch-" + kernelName(): gatherXOR, "generic": gatherXORGeneric}
	for _, w := range []int{64, 128, 192, 256, 320, 512, 576, 1088, 100, 1} {
		for _, g := range []int{1, 3, 8} {
			for _, n := range []int{1, 2, 5} {
				for _, nq := range []int{1, 3} {
					for _, init := range []bool{false, true} {
						tstride := w<<g + 64*(n%2)
						tab := make([]byte, (n-1)*tstride+w<<g)
						fill(r, tab)
						idxStride := n + 2
						idx := make([]byte, nq*idxStride)
						for i := range idx {
							idx[i] = byte(r.IntN(1 << g))
						}
						acc0 := make([]byte, nq*w+7) // a tail the kernels must not touch
						fill(r, acc0)
						want := bytes.Clone(acc0)
						naiveGather(want, nq, tab, tstride, idx, idxStride, n, w, init)
						for name, f := range impls {
							got := bytes.Clone(acc0)
							f(got, nq, tab, tstride, idx, idxStride, n, g, w, init)
							if !bytes.Equal(got, want) {
								t.Fatalf("%s gather w=%d g=%d n=%d nq=%d init=%v: wrong bytes", name, w, g, n, nq, init)
							}
						}
					}
				}
			}
		}
	}
	// xorBroadcast: dst[x] = src[x] ^ row[x mod w].
	for _, w := range []int{64, 192, 256, 320, 1024, 100, 1} {
		for _, reps := range []int{1, 2, 8} {
			src, row := make([]byte, w*reps), make([]byte, w)
			fill(r, src)
			fill(r, row)
			want := make([]byte, w*reps+5)
			fill(r, want)
			dst0 := bytes.Clone(want)
			for x := 0; x < w*reps; x++ {
				want[x] = src[x] ^ row[x%w]
			}
			for name, f := range map[string]func(dst, src, row []byte){
				"dispatch-" + kernelName(): xorBroadcast, "generic": xorBroadcastGeneric,
			} {
				got := bytes.Clone(dst0)
				f(got[:w*reps], src, row)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s broadcast w=%d reps=%d: wrong bytes", name, w, reps)
				}
			}
		}
	}
}

// TestGatherBounds: the assembly's wrapper refuses arguments that would
// reach outside the buffers instead of reading or writing there. (The
// portable kernel is memory-safe by Go's own checks, which allow slicing up
// to a buffer's capacity, so this concerns the assembly only.)
func TestGatherBounds(t *testing.T) {
	for _, k := range testKernels() {
		if k != "generic" {
			t.Run(k, func(t *testing.T) {
				useKernel(t, k)
				testGatherBounds(t)
			})
		}
	}
}

func testGatherBounds(t *testing.T) {
	const w, g, n, nq = 64, 2, 3, 2
	tstride := w << g
	ok := func() ([]byte, []byte, []byte) {
		return make([]byte, nq*w), make([]byte, (n-1)*tstride+w<<g), make([]byte, nq*n)
	}
	for i, mutate := range []func(acc, tab, idx []byte) ([]byte, []byte, []byte){
		func(acc, tab, idx []byte) ([]byte, []byte, []byte) { return acc[:nq*w-1], tab, idx },
		func(acc, tab, idx []byte) ([]byte, []byte, []byte) { return acc, tab[:len(tab)-1], idx },
		func(acc, tab, idx []byte) ([]byte, []byte, []byte) { return acc, tab, idx[:len(idx)-1] },
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			acc, tab, idx := mutate(ok())
			defer func() {
				if recover() == nil {
					t.Error("out-of-bounds arguments accepted")
				}
			}()
			gatherXOR(acc, nq, tab, tstride, idx, n, n, g, w, false)
		})
	}
}

// BenchmarkGather times one block of the inner loop in cache (G = 8 groups
// of g = 5, w = 256, 64 queries) at every kernel level. (A portable kernel
// keeping the accumulator in eight uint64 variables measured 1.6× slower
// than this crypto/subtle one, whose XORBytes is vectorised.)
func BenchmarkGather(b *testing.B) {
	const nq, n, g, w = 64, 8, 5, 256
	r := rand.New(rand.NewPCG(1, 2))
	tstride := w << g
	tab, acc, idx := make([]byte, n*tstride), make([]byte, nq*w), make([]byte, nq*n)
	fill(r, tab)
	for i := range idx {
		idx[i] = byte(r.IntN(1 << g))
	}
	for _, k := range testKernels() {
		b.Run(k, func(b *testing.B) {
			useKernel(b, k)
			b.SetBytes(nq * n * w)
			for b.Loop() {
				gatherXOR(acc, nq, tab, tstride, idx, n, n, g, w, false)
			}
		})
	}
}
