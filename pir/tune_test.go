package pir

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestTune sweeps the engine's plan (group bits, slice width, groups per
// block) and logs the best of several runs of each; it guided the defaults
// of Engine.choose. Run with RIFFLE_TUNE=1 go test -run Tune -v ./pir/.
func TestTune(t *testing.T) {
	if os.Getenv("RIFFLE_TUNE") == "" {
		t.Skip("set RIFFLE_TUNE=1 to sweep the engine's plans")
	}
	b := 64 << 10
	if v := envInt("PIR_TUNE_B"); v > 0 {
		b = v
	}
	workers := envInt("PIR_TUNE_WORKERS")
	for _, s := range benchShapes {
		db := benchDB(t, s.L, b)
		masks := randMasks(rand.New(rand.NewPCG(1, 1)), s.Q, s.L, 0)
		out := newOut(s.Q, b, 0)
		best := time.Duration(1 << 62)
		for g := 4; g <= 8; g++ {
			for _, w := range []int{256, 512, 1024, 2048} {
				for _, G := range []int{4, 8, 16, 32, 64, 128} {
					if (1<<g)*w*G > 1<<20 || (1<<g)*w*G < 64<<10 {
						continue
					}
					e := NewEngine(Options{Workers: workers, GroupBits: g, SliceBytes: w, BlockGroups: G})
					d := time.Duration(1 << 62)
					for rep := 0; rep < 3; rep++ {
						t0 := time.Now()
						if err := e.Answer(db, b, masks, out); err != nil {
							t.Fatal(err)
						}
						d = min(d, time.Since(t0))
					}
					mark := ""
					if d < best {
						best, mark = d, " *"
					}
					t.Logf("Q%d L%d g=%d w=%d G=%d tab=%dK: %v%s", s.Q, s.L, g, w, G, (1<<g)*w*G>>10, d, mark)
				}
			}
		}
		auto := NewEngine(Options{Workers: workers})
		p := auto.choose(s.Q, s.L, b)
		d := time.Duration(1 << 62)
		for rep := 0; rep < 3; rep++ {
			t0 := time.Now()
			_ = auto.Answer(db, b, masks, out)
			d = min(d, time.Since(t0))
		}
		t.Logf("Q%d L%d auto %+v: %v (best %v)", s.Q, s.L, p, d, best)
	}
}
