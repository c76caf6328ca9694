package pir

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// The privacy sanity check of §6.3: the mask the primary sees is uniformly
// distributed whatever row is wanted. Thresholds are fixed; the generator is
// seeded, so the outcome is reproducible. A biased client, written below,
// must fail the same statistics.

// primaryMaskFunc builds the primary's mask from fresh keys with the other
// m-1 servers.
type primaryMaskFunc func(r *rand.Rand, m, L, row int) []byte

func freshOthers(r *rand.Rand, m int) []*Keys {
	var epoch [32]byte
	ks := make([]*Keys, m-1)
	for j := range ks {
		var shared, cpub, spub [32]byte
		for _, b := range [][]byte{shared[:], cpub[:], spub[:]} {
			for i := range b {
				b[i] = byte(r.Uint32())
			}
		}
		k, err := DeriveKeys(shared[:], epoch, cpub[:], spub[:])
		if err != nil {
			panic(err)
		}
		ks[j] = k
	}
	return ks
}

func honestMask(r *rand.Rand, m, L, row int) []byte {
	m2, err := Query(freshOthers(r, m), 3, 1, L, row)
	if err != nil {
		panic(err)
	}
	return m2
}

// biasedMask is a broken client: it ORs the wanted row in instead of
// XORing it, so the primary's mask always has the wanted bit set.
func biasedMask(r *rand.Rand, m, L, row int) []byte {
	ms := make([][]byte, 0, m-1)
	for _, k := range freshOthers(r, m) {
		ms = append(ms, k.Mask(3, 1, L))
	}
	out := make([]byte, MaskBytes(L))
	for _, x := range ms {
		XorInto(out, x)
	}
	out[row/8] |= 1 << (row % 8)
	return out
}

// slightlyBiasedMask is a subtler broken client: one query in five it sets
// the wanted bit instead of flipping it (as a client might when it mixes up
// cover and real queries), so that bit is 1 with probability 0.6, not 0.5.
// A per-bit test of a few thousand masks must see it; the whole-mask test
// must too.
func slightlyBiasedMask(r *rand.Rand, m, L, row int) []byte {
	if r.IntN(5) == 0 {
		return biasedMask(r, m, L, row)
	}
	return honestMask(r, m, L, row)
}

// brokenClients must fail both statistics (in a fixed order, so that the
// seeded draws, and so the outcome, are reproducible).
var brokenClients = []struct {
	name string
	f    primaryMaskFunc
}{{"biased", biasedMask}, {"slightly biased", slightlyBiasedMask}}

// wholeMaskChi2 is the chi-square statistic of the 2^L whole masks over n
// draws (L ≤ 8), with 2^L - 1 degrees of freedom.
func wholeMaskChi2(f primaryMaskFunc, r *rand.Rand, m, L, row, n int) float64 {
	counts := make([]int, 1<<L)
	for i := 0; i < n; i++ {
		counts[f(r, m, L, row)[0]]++
	}
	exp := float64(n) / float64(len(counts))
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - exp
		chi += d * d / exp
	}
	return chi
}

// worstBitChi2 is the largest per-bit-position chi-square statistic (1
// degree of freedom each) of n masks over L rows.
func worstBitChi2(f primaryMaskFunc, r *rand.Rand, m, L, row, n int) float64 {
	ones := make([]int, L)
	for i := 0; i < n; i++ {
		mk := f(r, m, L, row)
		for b := 0; b < L; b++ {
			ones[b] += int(mk[b/8] >> (b % 8) & 1)
		}
	}
	worst := 0.0
	for _, o := range ones {
		d := float64(o) - float64(n)/2
		worst = max(worst, 4*d*d/float64(n))
	}
	return worst
}

const (
	// chi2Whole7 is chi-square's 0.999 quantile at 7 degrees of freedom
	// (whole masks over L = 3 rows).
	chi2Whole7 = 24.32
	// chi2Bit is the threshold for the worst of 40 per-bit statistics with
	// 1 degree of freedom: the 1 - 2.5e-5 quantile, a 0.1% family-wise
	// false alarm.
	chi2Bit = 17.8
)

func TestPrimaryMaskUniform(t *testing.T) {
	if testing.Short() {
		// One goroutine's statistics: the race pass (-short) finds
		// nothing in them and took 38 s; the full pass runs them.
		t.Skip("statistics on one goroutine: the full pass runs it")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, m := range []int{2, 3} {
		for _, row := range []int{0, 2} {
			chi := wholeMaskChi2(honestMask, r, m, 3, row, 4000)
			if chi > chi2Whole7 {
				t.Errorf("m = %d, row %d: whole-mask chi2 %.1f > %.1f", m, row, chi, chi2Whole7)
			}
			for _, c := range brokenClients {
				if bad := wholeMaskChi2(c.f, r, m, 3, row, 4000); bad <= chi2Whole7 {
					t.Errorf("m = %d, row %d: %s client passes the whole-mask test (chi2 %.1f)", m, row, c.name, bad)
				}
			}
		}
		for _, row := range []int{0, 17, 39} {
			name := fmt.Sprintf("m%d_row%d", m, row)
			if chi := worstBitChi2(honestMask, r, m, 40, row, 2000); chi > chi2Bit {
				t.Errorf("%s: per-bit chi2 %.1f > %.1f", name, chi, chi2Bit)
			}
			for _, c := range brokenClients {
				if bad := worstBitChi2(c.f, r, m, 40, row, 2000); bad <= chi2Bit {
					t.Errorf("%s: %s client passes the per-bit test (chi2 %.1f)", name, c.name, bad)
				}
			}
		}
	}
}

// TestCoverRowUniform: cover rows are drawn uniformly (chi-square over L = 5
// rows, 4 degrees of freedom, 0.999 quantile 18.47), including from a reader
// whose first draws fall in the rejected range.
func TestCoverRowUniform(t *testing.T) {
	const L, n = 5, 20000
	src := rand.NewChaCha8([32]byte{9})
	counts := make([]int, L)
	for i := 0; i < n; i++ {
		row, err := CoverRow(src, L)
		if err != nil {
			t.Fatal(err)
		}
		counts[row]++
	}
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - n/L
		chi += d * d / (n / L)
	}
	if chi > 18.47 {
		t.Errorf("cover rows %v: chi2 %.1f", counts, chi)
	}
	// 0xffffffff is above the largest multiple of 5 below 2^32: rejected.
	rej := bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 7})
	if row, err := CoverRow(rej, L); err != nil || row != 2 {
		t.Errorf("after a rejected draw: row %d, %v; want 2", row, err)
	}
}
