package group

import (
	"fmt"
	"runtime"
	"sync"
)

// pippengerWindow returns the window width c that minimises the number of
// point additions, (256/c + 1)·(n + 2^c): every window adds each point to a
// bucket once and sums its 2^(c−1) buckets with about 2^c additions.
func pippengerWindow(n int) int {
	best, bestCost := 2, -1
	for c := 2; c <= 16; c++ {
		cost := (256/c + 1) * (n + 1<<c)
		if bestCost < 0 || cost < bestCost {
			best, bestCost = c, cost
		}
	}
	return best
}

// VarTimeMSMPippenger returns Σ s_i·P_i in variable time with the bucket
// (Pippenger) method on signed window digits, the windows spread over all
// cores. It uses only the public Element.Add and Subtract. Public data only.
func VarTimeMSMPippenger(s []*Scalar, p []*Element) *Element {
	if len(s) != len(p) {
		panic(fmt.Sprintf("group: MSM length mismatch: %d scalars, %d points", len(s), len(p)))
	}
	n := len(s)
	if n == 0 {
		return NewElement()
	}
	c := pippengerWindow(n)
	// Scalars are < 2^253; signed recoding can carry one bit further, and
	// 256/c + 1 windows of c bits always cover 256 bits.
	windows := 256/c + 1
	half := int32(1) << (c - 1)
	digits := make([]int32, n*windows)
	parallelFor(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			b := s[i].Bytes()
			carry := int32(0)
			for w := range windows {
				v := carry
				for k := range c {
					bit := w*c + k
					if bit < 256 {
						v += int32(b[bit/8]>>(bit%8)&1) << k
					}
				}
				// Map v ∈ [0, 2^c] to (−2^(c−1), 2^(c−1)].
				carry = 0
				if v > half {
					v -= 2 * half
					carry = 1
				}
				digits[i*windows+w] = v
			}
		}
	})
	sums := make([]*Element, windows)
	parallelFor(windows, func(lo, hi int) {
		buckets := make([]*Element, half)
		for w := lo; w < hi; w++ {
			for j := range buckets {
				buckets[j] = NewElement()
			}
			for i := range n {
				switch d := digits[i*windows+w]; {
				case d > 0:
					buckets[d-1].Add(buckets[d-1], p[i])
				case d < 0:
					buckets[-d-1].Subtract(buckets[-d-1], p[i])
				}
			}
			// Σ_j (j+1)·bucket_j as a running sum from the top.
			running, acc := NewElement(), NewElement()
			for j := len(buckets) - 1; j >= 0; j-- {
				running.Add(running, buckets[j])
				acc.Add(acc, running)
			}
			sums[w] = acc
		}
	})
	out := NewElement()
	for w := windows - 1; w >= 0; w-- {
		for range c {
			out.Add(out, out)
		}
		out.Add(out, sums[w])
	}
	return out
}

// parallelFor calls f on contiguous sub-ranges of [0, n) on all cores.
func parallelFor(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(k*n/workers, (k+1)*n/workers)
		}()
	}
	wg.Wait()
}
