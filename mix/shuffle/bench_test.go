package shuffle

import (
	"crypto/rand"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/group"
)

// Benchmarks at n = 1000, w = 2 (the protocol's setup with a few servers), reported
// per ciphertext (n·w), and the operation counts of docs/proto-shuffle.md §7
// priced at unit costs measured in the same run. TestPerformanceFloor (RIFFLE_LONG=1) prints measured/floor.

const benchN, benchW = 1000, 2

var benchFix *fixture

func benchFixture(b testing.TB) *fixture {
	if benchFix == nil {
		benchFix = newFixture(b, "bench", benchN, benchW)
	}
	return benchFix
}

func perCiphertext(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(benchN*benchW), "µs/ciphertext")
}

func BenchmarkShuffle(b *testing.B) {
	f := benchFixture(b)
	for b.Loop() {
		if _, _, err := Shuffle(f.st.Keys, f.st.Inputs, rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
	perCiphertext(b)
}

// BenchmarkProve includes the self-check (a full verification).
func BenchmarkProve(b *testing.B) {
	f := benchFixture(b)
	for b.Loop() {
		if _, err := Prove(f.st, f.wit, rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
	perCiphertext(b)
}

// BenchmarkProveNoSelfCheck is the prover alone, the figure to hold
// against the prover floor.
func BenchmarkProveNoSelfCheck(b *testing.B) {
	f := benchFixture(b)
	for b.Loop() {
		if _, err := prove(f.st, f.wit, rand.Reader, defaultSuite); err != nil {
			b.Fatal(err)
		}
	}
	perCiphertext(b)
}

func benchProof(b testing.TB) (*fixture, *Proof, []byte) {
	f := benchFixture(b)
	p, err := prove(f.st, f.wit, rand.Reader, defaultSuite)
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := p.MarshalBinary()
	return f, p, enc
}

func BenchmarkVerify(b *testing.B) {
	f, p, _ := benchProof(b)
	for b.Loop() {
		if err := Verify(f.st, p, nil); err != nil {
			b.Fatal(err)
		}
	}
	perCiphertext(b)
}

func BenchmarkParse(b *testing.B) {
	_, _, enc := benchProof(b)
	for b.Loop() {
		if _, err := Parse(enc, benchN, benchW); err != nil {
			b.Fatal(err)
		}
	}
}

// Unit costs, one goroutine.

func benchScalars(k int) ([]*group.Scalar, []*group.Element) {
	r := newDetReader("units")
	s := make([]*group.Scalar, k)
	p := make([]*group.Element, k)
	for i := range k {
		s[i], _ = group.RandomScalar(r)
		x, _ := group.RandomScalar(r)
		p[i] = group.NewElement().ScalarBaseMult(x)
	}
	return s, p
}

func BenchmarkUnitScalarBaseMult(b *testing.B) {
	s, _ := benchScalars(1)
	for b.Loop() {
		group.NewElement().ScalarBaseMult(s[0])
	}
}

func BenchmarkUnitScalarMult(b *testing.B) {
	s, p := benchScalars(1)
	for b.Loop() {
		group.NewElement().ScalarMult(s[0], p[0])
	}
}

func BenchmarkUnitMultiScalarMult2(b *testing.B) {
	s, p := benchScalars(2)
	for b.Loop() {
		group.NewElement().MultiScalarMult(s, p)
	}
}

func BenchmarkUnitMultiScalarMult512(b *testing.B) {
	s, p := benchScalars(512)
	for b.Loop() {
		group.NewElement().MultiScalarMult(s, p)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/512/1000, "µs/point")
}

func BenchmarkUnitVarTimeMSM512(b *testing.B) {
	s, p := benchScalars(512)
	for b.Loop() {
		group.NewElement().VarTimeMultiScalarMult(s, p)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/512/1000, "µs/point")
}

func BenchmarkUnitEncode(b *testing.B) {
	_, p := benchScalars(1)
	var buf [32]byte
	for b.Loop() {
		copy(buf[:], p[0].Bytes())
	}
}

func BenchmarkUnitDecode(b *testing.B) {
	_, p := benchScalars(1)
	enc := p[0].Bytes()
	for b.Loop() {
		group.DecodeElement(enc)
	}
}

// perOp returns the time of one operation measured by fn, in µs.
func perOp(fn func(b *testing.B)) float64 {
	r := testing.Benchmark(fn)
	return float64(r.T.Nanoseconds()) / float64(r.N) / 1000
}

// TestPerformanceFloor measures the unit costs and the three operations in
// one run and prints measured/floor, the floor being docs/proto-shuffle.md §7's
// operation count priced at the measured units (one core), divided by the
// number of cores for the parallel code.
func TestPerformanceFloor(t *testing.T) {
	if !long() {
		t.Skip("RIFFLE_LONG=1 to run")
	}
	const n, w = benchN, benchW
	bm := perOp(BenchmarkUnitScalarBaseMult)
	sm := perOp(BenchmarkUnitScalarMult)
	ct2 := perOp(BenchmarkUnitMultiScalarMult2)
	ct := perOp(BenchmarkUnitMultiScalarMult512) / 512
	vt := perOp(BenchmarkUnitVarTimeMSM512) / 512
	enc := perOp(BenchmarkUnitEncode)
	dec := perOp(BenchmarkUnitDecode)
	cores := float64(runtime.GOMAXPROCS(0))

	timeIt := func(fn func()) float64 {
		fn() // warm the generator cache and the fixture
		const reps = 3
		start := time.Now()
		for range reps {
			fn()
		}
		return float64(time.Since(start).Microseconds()) / reps
	}
	f, p, encP := benchProof(t)
	tShuffle := timeIt(func() { Shuffle(f.st.Keys, f.st.Inputs, rand.Reader) })
	tProve := timeIt(func() { prove(f.st, f.wit, rand.Reader, defaultSuite) })
	tVerify := timeIt(func() { Verify(f.st, p, nil) })
	tParse := timeIt(func() { Parse(encP, n, w) })

	nf, wf := float64(n), float64(w)
	fShuffle := nf * wf * (bm + sm)
	// Prover: (n+2) Bm + 2n MSM_CT(2) + (2w+1)(n+1) CT points + (3n+2w+3) E
	// for the proof, + 4nw E to hash the statement (it holds elements).
	fProve := (nf+2)*bm + 2*nf*ct2 + (2*wf+1)*(nf+1)*ct + (3*nf+2*wf+3+4*nf*wf)*enc
	// Verifier: 4nw E to hash the statement + MSM_VT over 4nw+4n+3w+5 points.
	fVerify := 4*nf*wf*enc + (4*nf*wf+4*nf+3*wf+5)*vt
	fParse := (3*nf + 2*wf + 3) * dec
	var out string
	out += fmt.Sprintf("units (µs, 1 core): Bm %.1f  Sm %.1f  MSM_CT(2) %.1f  CT/pt@512 %.2f  VT/pt@512 %.2f  E %.2f  D %.2f\n", bm, sm, ct2, ct, vt, enc, dec)
	out += fmt.Sprintf("n = %d, w = %d, %d cores\n", n, w, int(cores))
	for _, r := range []struct {
		name        string
		meas, floor float64
	}{{"Shuffle", tShuffle, fShuffle}, {"Prove (no self-check)", tProve, fProve}, {"Verify", tVerify, fVerify}, {"Parse", tParse, fParse}} {
		out += fmt.Sprintf("%-22s measured %8.1f ms  floor(1 core) %8.1f ms  floor/%d %8.1f ms  ratio %.2f  (%.1f µs/ciphertext)\n",
			r.name, r.meas/1000, r.floor/1000, int(cores), r.floor/cores/1000, r.meas/(r.floor/cores), r.meas/(nf*wf))
	}
	t.Log("\n" + out)
	if path := os.Getenv("RIFFLE_FLOOR_OUT"); path != "" {
		os.WriteFile(path, []byte(out), 0o644)
	}
}
