package group

import (
	"crypto/sha512"
	"fmt"
	"testing"
	"time"
)

func msmInputs(n int) ([]*Scalar, []*Element) {
	s := make([]*Scalar, n)
	p := make([]*Element, n)
	for i := range n {
		h := sha512.Sum512([]byte(fmt.Sprint("msm ", i)))
		s[i] = NewScalar()
		s[i].SetUniformBytes(h[:])
		h = sha512.Sum512(h[:])
		p[i] = NewElement()
		p[i].SetUniformBytes(h[:])
	}
	return s, p
}

func TestPippengerMatchesStraus(t *testing.T) {
	s, p := msmInputs(1100)
	// Extreme scalars: 0, 1, −1 (= ℓ−1, the largest), and 2^252.
	s[0] = NewScalar()
	s[1] = ScalarFromUint64(1)
	s[2] = NewScalar().Negate(ScalarFromUint64(1))
	var b [32]byte
	b[31] = 0x10
	s[3], _ = DecodeScalar(b[:])
	for _, k := range []int{0, 1, 2, 3, 4, 5, 100, 1023, 1024, 1100} {
		want := naiveSum(s[:k], p[:k])
		if VarTimeMSMPippenger(s[:k], p[:k]).Equal(want) != 1 {
			t.Fatalf("%d points: Pippenger differs from the naive sum", k)
		}
	}
}

// BenchmarkMSM compares chunked Straus (VarTimeMSM) with Pippenger, both on
// all cores, at verifier sizes (n = 1000, w = 2 gives 12 011 points).
func BenchmarkMSM(b *testing.B) {
	for _, n := range []int{64, 128, 256, 512, 1024, 4096, 12011, 50000} {
		s, p := msmInputs(n)
		b.Run(fmt.Sprintf("straus/%d", n), func(b *testing.B) {
			for b.Loop() {
				VarTimeMSM(s, p)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1000, "µs/point")
		})
		b.Run(fmt.Sprintf("pippenger/%d", n), func(b *testing.B) {
			for b.Loop() {
				VarTimeMSMPippenger(s, p)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1000, "µs/point")
		})
	}
}

// BenchmarkMSMPaired alternates chunked Straus and Pippenger in every
// iteration, so that both see the same load on the shared machine, and
// reports µs per point for each and the ratio Straus/Pippenger.
func BenchmarkMSMPaired(b *testing.B) {
	for _, n := range []int{256, 512, 1024, 4096, 12011, 50000} {
		s, p := msmInputs(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var ts, tp time.Duration
			for b.Loop() {
				start := time.Now()
				VarTimeMSMChunked(s, p, MSMChunk)
				ts += time.Since(start)
				start = time.Now()
				VarTimeMSMPippenger(s, p)
				tp += time.Since(start)
			}
			per := float64(b.N*n) * 1000
			b.ReportMetric(float64(ts.Nanoseconds())/per, "straus-µs/pt")
			b.ReportMetric(float64(tp.Nanoseconds())/per, "pippenger-µs/pt")
			b.ReportMetric(float64(ts)/float64(tp), "straus/pippenger")
		})
	}
}
