package pir

import (
	"crypto/subtle"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
)

// Benchmarks of §9's bottleneck. The large cases allocate up to 512 MiB:
// run them alone, with few iterations, e.g.
//
//	go test -run '^$' -bench 'Answer' -benchtime 2x ./pir/
//
// Each reports answers/s and the effective rate: the reference's XOR volume
// Q·(L/2)·b divided by the time taken.

var benchShapes = []struct{ Q, L int }{{200, 200}, {512, 512}, {1000, 1000}}

const benchB = 256 << 10

// benchDB fills L rows of b bytes in a huge-page Buffer, as a node would
// hold a round's database; the reference and the engine read the same one.
func benchDB(tb testing.TB, L, b int) SliceRows {
	buf, err := NewBuffer(L, b)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { buf.Close() })
	r := rand.New(rand.NewPCG(7, uint64(L)))
	db := SliceRows(buf.Rows())
	for i := range db {
		for k := 0; k < b; k += 8 {
			v := r.Uint64()
			for j := 0; j < 8; j++ {
				db[i][k+j] = byte(v >> (8 * j))
			}
		}
	}
	return db
}

func envInt(name string) int {
	v, _ := strconv.Atoi(os.Getenv(name))
	return v
}

func BenchmarkAnswer(b *testing.B) {
	for _, s := range benchShapes {
		db := benchDB(b, s.L, benchB)
		masks := randMasks(rand.New(rand.NewPCG(1, 1)), s.Q, s.L, 0)
		outBuf, err := NewBuffer(s.Q, benchB)
		if err != nil {
			b.Fatal(err)
		}
		out := outBuf.Rows()
		report := func(b *testing.B) {
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(s.Q)/sec, "answers/s")
			b.ReportMetric(float64(s.Q)*float64(s.L)/2*benchB/sec/1e9, "eff-GB/s")
		}
		b.Run(fmt.Sprintf("Q%d_L%d/reference", s.Q, s.L), func(b *testing.B) {
			for b.Loop() {
				if err := Reference(db, benchB, masks, out); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
		})
		// The reference on two cores: queries split in halves.
		b.Run(fmt.Sprintf("Q%d_L%d/reference-2cores", s.Q, s.L), func(b *testing.B) {
			h := s.Q / 2
			for b.Loop() {
				var wg sync.WaitGroup
				for _, r := range [][2]int{{0, h}, {h, s.Q}} {
					wg.Go(func() {
						if err := Reference(db, benchB, masks[r[0]:r[1]], out[r[0]:r[1]]); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			report(b)
		})
		// The engine on one core and on all, then on all with the lower
		// kernel levels, what a CPU without AVX-512 (or without AVX2) runs.
		type run struct {
			workers int
			kernel  string
		}
		runs := []run{{1, kernelName()}}
		for _, k := range testKernels() {
			runs = append(runs, run{0, k})
		}
		for _, ru := range runs {
			opts := Options{Workers: ru.workers, GroupBits: envInt("PIR_G"), SliceBytes: envInt("PIR_W"), BlockGroups: envInt("PIR_BG")}
			b.Run(fmt.Sprintf("Q%d_L%d/fast-%s-workers%d", s.Q, s.L, ru.kernel, ru.workers), func(b *testing.B) {
				useKernel(b, ru.kernel)
				e := NewEngine(opts)
				for b.Loop() {
					if err := e.Answer(db, benchB, masks, out); err != nil {
						b.Fatal(err)
					}
				}
				report(b)
			})
		}
		outBuf.Close()
	}
}

// BenchmarkXORInCache is the machine's XOR throughput on 64 KiB buffers that
// stay in cache (crypto/subtle.XORBytes), the yardstick for eff-GB/s.
func BenchmarkXORInCache(b *testing.B) {
	x, y := make([]byte, 64<<10), make([]byte, 64<<10)
	const reps = 512 // so that -benchtime 2x still measures ~10 ms
	b.SetBytes(int64(len(x)) * reps)
	for b.Loop() {
		for range reps {
			subtle.XORBytes(x, x, y)
		}
	}
}
