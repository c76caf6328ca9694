//go:build circl

// The group library comparison of the package comment: gtank/ristretto255
// (the one in use) against cloudflare/circl's group.Ristretto255. circl's
// group wraps github.com/bwesterb/go-ristretto, which is not in this module's
// go.sum, so the file is behind the "circl" build tag; it imports neither
// this package nor anything of riffle, and runs unchanged in a scratch module
// that requires both libraries:
//
//	go test -tags circl -run Circl -bench Lib -benchtime 2000x
package group_test

import (
	"bytes"
	"crypto/sha512"
	"fmt"
	"testing"
	"time"

	circl "github.com/cloudflare/circl/group"
	"github.com/gtank/ristretto255"
)

const msmPoints = 512

func gtankScalar(i int) *ristretto255.Scalar {
	h := sha512.Sum512([]byte(fmt.Sprint("scalar ", i)))
	s := ristretto255.NewScalar()
	s.SetUniformBytes(h[:])
	return s
}

// circlScalar returns the same scalar as gtankScalar.
func circlScalar(i int) circl.Scalar {
	s := circl.Ristretto255.NewScalar()
	if err := s.UnmarshalBinary(gtankScalar(i).Bytes()); err != nil {
		panic(err)
	}
	return s
}

// TestCirclAgrees: both libraries compute the same k·G and k·P encodings and
// both reject a non-canonical encoding (RFC 9496 A.2's first vector).
func TestCirclAgrees(t *testing.T) {
	p := ristretto255.NewIdentityElement().ScalarBaseMult(gtankScalar(1000))
	cp := circl.Ristretto255.NewElement()
	if err := cp.UnmarshalBinary(p.Bytes()); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		a := ristretto255.NewIdentityElement().ScalarBaseMult(gtankScalar(i)).Bytes()
		b, _ := circl.Ristretto255.NewElement().MulGen(circlScalar(i)).MarshalBinary()
		c := ristretto255.NewIdentityElement().ScalarMult(gtankScalar(i), p).Bytes()
		d, _ := circl.Ristretto255.NewElement().Mul(cp, circlScalar(i)).MarshalBinary()
		if !bytes.Equal(a, b) || !bytes.Equal(c, d) {
			t.Fatalf("libraries disagree on scalar %d", i)
		}
	}
	bad := bytes.Repeat([]byte{0xff}, 32)
	bad[0], bad[31] = 0x00, 0xff
	if err := circl.Ristretto255.NewElement().UnmarshalBinary(bad); err == nil {
		t.Fatal("circl accepted a non-canonical encoding")
	}
}

func BenchmarkLibScalarBaseMult(b *testing.B) {
	b.Run("gtank", func(b *testing.B) {
		s := gtankScalar(1)
		for b.Loop() {
			ristretto255.NewIdentityElement().ScalarBaseMult(s)
		}
	})
	b.Run("circl", func(b *testing.B) {
		s := circlScalar(1)
		for b.Loop() {
			circl.Ristretto255.NewElement().MulGen(s)
		}
	})
}

func BenchmarkLibScalarMult(b *testing.B) {
	b.Run("gtank", func(b *testing.B) {
		s := gtankScalar(1)
		p := ristretto255.NewIdentityElement().ScalarBaseMult(gtankScalar(2))
		for b.Loop() {
			ristretto255.NewIdentityElement().ScalarMult(s, p)
		}
	})
	b.Run("circl", func(b *testing.B) {
		s := circlScalar(1)
		p := circl.Ristretto255.NewElement().MulGen(circlScalar(2))
		for b.Loop() {
			circl.Ristretto255.NewElement().Mul(p, s)
		}
	})
}

// circl has no multi-scalar multiplication; its figure is the naive sum of
// single multiplications, which is what a verifier on circl would have to do.
func BenchmarkLibVarTimeMSM512(b *testing.B) {
	b.Run("gtank", func(b *testing.B) {
		s := make([]*ristretto255.Scalar, msmPoints)
		p := make([]*ristretto255.Element, msmPoints)
		for i := range s {
			s[i] = gtankScalar(i)
			p[i] = ristretto255.NewIdentityElement().ScalarBaseMult(gtankScalar(i + msmPoints))
		}
		for b.Loop() {
			ristretto255.NewIdentityElement().VarTimeMultiScalarMult(s, p)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/msmPoints/1000, "µs/point")
	})
	b.Run("circl-naive", func(b *testing.B) {
		s := make([]circl.Scalar, msmPoints)
		p := make([]circl.Element, msmPoints)
		for i := range s {
			s[i] = circlScalar(i)
			p[i] = circl.Ristretto255.NewElement().MulGen(circlScalar(i + msmPoints))
		}
		for b.Loop() {
			sum := circl.Ristretto255.Identity()
			t := circl.Ristretto255.NewElement()
			for i := range s {
				sum.Add(sum, t.Mul(p[i], s[i]))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/msmPoints/1000, "µs/point")
	})
}

func BenchmarkLibDecode(b *testing.B) {
	enc := ristretto255.NewIdentityElement().ScalarBaseMult(gtankScalar(3)).Bytes()
	b.Run("gtank", func(b *testing.B) {
		for b.Loop() {
			if _, err := ristretto255.NewIdentityElement().SetCanonicalBytes(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("circl", func(b *testing.B) {
		for b.Loop() {
			if err := circl.Ristretto255.NewElement().UnmarshalBinary(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkLibEncode(b *testing.B) {
	b.Run("gtank", func(b *testing.B) {
		p := ristretto255.NewIdentityElement().ScalarBaseMult(gtankScalar(3))
		var buf [32]byte
		for b.Loop() {
			p.Encode(buf[:0])
		}
	})
	b.Run("circl", func(b *testing.B) {
		p := circl.Ristretto255.NewElement().MulGen(circlScalar(3))
		for b.Loop() {
			p.MarshalBinary()
		}
	})
}

// BenchmarkLibPaired alternates the two libraries in bursts of 50 operations
// inside one benchmark, so that both see the same machine load (the
// development machine is shared); it reports µs per operation for each and
// the ratio circl/gtank.
func BenchmarkLibPaired(b *testing.B) {
	gs, cs := gtankScalar(1), circlScalar(1)
	gp := ristretto255.NewIdentityElement().ScalarBaseMult(gtankScalar(2))
	cp := circl.Ristretto255.NewElement().MulGen(circlScalar(2))
	enc := gp.Bytes()
	var buf [32]byte
	ops := []struct {
		name         string
		gtank, circl func()
	}{
		{"ScalarBaseMult", func() { ristretto255.NewIdentityElement().ScalarBaseMult(gs) }, func() { circl.Ristretto255.NewElement().MulGen(cs) }},
		{"ScalarMult", func() { ristretto255.NewIdentityElement().ScalarMult(gs, gp) }, func() { circl.Ristretto255.NewElement().Mul(cp, cs) }},
		{"Decode", func() { ristretto255.NewIdentityElement().SetCanonicalBytes(enc) }, func() { circl.Ristretto255.NewElement().UnmarshalBinary(enc) }},
		{"Encode", func() { gp.Encode(buf[:0]) }, func() { cp.MarshalBinary() }},
	}
	const burst = 50
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			var tg, tc time.Duration
			for b.Loop() {
				start := time.Now()
				for range burst {
					op.gtank()
				}
				tg += time.Since(start)
				start = time.Now()
				for range burst {
					op.circl()
				}
				tc += time.Since(start)
			}
			per := float64(b.N * burst * 1000)
			b.ReportMetric(float64(tg.Nanoseconds())/per, "gtank-µs/op")
			b.ReportMetric(float64(tc.Nanoseconds())/per, "circl-µs/op")
			b.ReportMetric(float64(tc)/float64(tg), "circl/gtank")
		})
	}
}
