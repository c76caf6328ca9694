package shuffle

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/riffle-net/riffle/internal/group"
)

// ctChunk is the chunk size of the prover's constant-time MSMs: the
// underlying Straus tables stay in cache, and chunks spread over the cores.
const ctChunk = 512

// msmJob is one constant-time Σ s_i·P_i whose result goes to *out.
type msmJob struct {
	s   []*group.Scalar
	p   []*group.Element
	out **group.Element
}

// constantTimeMSMs runs the jobs, each split into chunks of ctChunk, on all
// cores. Only the constant-time MultiScalarMult is used: the scalars are
// secret.
func constantTimeMSMs(jobs []msmJob) {
	type piece struct{ job, lo, hi int }
	var pieces []piece
	for j, jb := range jobs {
		for lo := 0; lo < len(jb.s); lo += ctChunk {
			pieces = append(pieces, piece{j, lo, min(lo+ctChunk, len(jb.s))})
		}
	}
	parts := make([]*group.Element, len(pieces))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(pieces)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < len(pieces); k = int(next.Add(1) - 1) {
				pc := pieces[k]
				jb := jobs[pc.job]
				parts[k] = group.NewElement().MultiScalarMult(jb.s[pc.lo:pc.hi], jb.p[pc.lo:pc.hi])
			}
		}()
	}
	wg.Wait()
	for _, jb := range jobs {
		*jb.out = group.NewElement()
	}
	for k, pc := range pieces {
		o := *jobs[pc.job].out
		o.Add(o, parts[k])
	}
}

// nonces are the prover's random values, drawn in this order (fixed so that
// the KAT of docs/proto-shuffle.md is reproducible): r_1..r_n (by input
// position k), r̂_1..r̂_n, ω_1, ω_2, ω_3, ω_4,1..w, ω̂_1..n, ω'_1..n.
type nonces struct {
	r, rHat            []*group.Scalar
	om1, om2, om3      *group.Scalar
	om4, omHat, omPrim []*group.Scalar
}

func drawNonces(n, w int, rand io.Reader) (*nonces, error) {
	var err error
	draw := func(k int) []*group.Scalar {
		out := make([]*group.Scalar, k)
		for i := range out {
			if err != nil {
				return nil
			}
			out[i], err = group.RandomScalar(rand)
		}
		return out
	}
	nc := &nonces{}
	nc.r = draw(n)
	nc.rHat = draw(n)
	om := draw(3)
	nc.om4 = draw(w)
	nc.omHat = draw(n)
	nc.omPrim = draw(n)
	if err != nil {
		return nil, fmt.Errorf("shuffle: prover randomness: %w", err)
	}
	nc.om1, nc.om2, nc.om3 = om[0], om[1], om[2]
	return nc, nil
}

func (nc *nonces) zero() {
	zeroScalars(nc.r, nc.rHat, nc.om4, nc.omHat, nc.omPrim, []*group.Scalar{nc.om1, nc.om2, nc.om3})
}

func zeroScalars(lists ...[]*group.Scalar) {
	for _, l := range lists {
		for _, s := range l {
			if s != nil {
				s.Zero()
			}
		}
	}
}

// checkWitness checks that wit fits an n×w statement: Pi a permutation of
// 0..n-1, R n×w without nil entries.
func checkWitness(wit *Witness, n, w int) error {
	if wit == nil {
		return fmt.Errorf("%w: nil", ErrWitness)
	}
	if len(wit.Pi) != n {
		return fmt.Errorf("%w: permutation of %d entries, statement has n = %d", ErrWitness, len(wit.Pi), n)
	}
	if _, err := Invert(wit.Pi); err != nil {
		return err
	}
	if len(wit.R) != n {
		return fmt.Errorf("%w: %d rows of scalars, want %d", ErrWitness, len(wit.R), n)
	}
	for i, row := range wit.R {
		if len(row) != w {
			return fmt.Errorf("%w: row %d has %d scalars, want %d", ErrWitness, i, len(row), w)
		}
		for j, r := range row {
			if r == nil {
				return fmt.Errorf("%w: scalar (%d, %d) is nil", ErrWitness, i, j)
			}
		}
	}
	return nil
}

// Prove proves that st.Outputs is a shuffle of st.Inputs with wit
// (docs/proto-shuffle.md §4.2), drawing nonces from rand (crypto/rand in
// production; never reuse a reader's output, repeated nonces reveal π). It
// verifies the proof before returning it and refuses to return a proof that
// does not verify, so a wrong witness never leaks a publishable transcript.
func Prove(st *Statement, wit *Witness, rand io.Reader) (*Proof, error) {
	p, err := prove(st, wit, rand, defaultSuite)
	if err != nil {
		return nil, err
	}
	if err := verify(st, p, rand, defaultSuite); err != nil {
		// The statement was valid, so the witness does not match the outputs.
		return nil, fmt.Errorf("%w: prover self-check failed, proof withheld: %w", ErrWitness, err)
	}
	return p, nil
}

// prove is Prove without the self-check.
func prove(st *Statement, wit *Witness, rand io.Reader, s suite) (*Proof, error) {
	n, w, err := st.check()
	if err != nil {
		return nil, err
	}
	if err := checkWitness(wit, n, w); err != nil {
		return nil, err
	}
	nc, err := drawNonces(n, w, rand)
	if err != nil {
		return nil, err
	}
	defer nc.zero()
	gens := s.gens(n + 1) // H_0 … H_n
	g := group.Base()
	sigma := statementDigest(st, s, n, w)

	p := &Proof{n: n, w: w}
	l := newLayout(n, w)
	enc := make([]byte, l.end)

	// Step 2: C_{π(i)} = r_{π(i)}·G + H_i (math indices), so that the
	// commitment at input position k carries the generator of the output k
	// goes to.
	p.c = make([]*group.Element, n)
	parallelRange(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k := wit.Pi[i]
			c := group.NewElement().ScalarBaseMult(nc.r[k])
			p.c[k] = c.Add(c, gens[i+1])
		}
	})
	parallelRange(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			off := l.c + k*group.ElementSize
			copy(enc[off:], p.c[k].Bytes())
		}
	})

	// Step 3: u from η, and u'_i = u_{π(i)} (secret: it reveals π).
	eta, u := challengeVector(sigma, n, enc[l.c:l.cHat])
	uPr := make([]*group.Scalar, n)
	for i := range n {
		uPr[i] = group.NewScalar().Set(u[wit.Pi[i]])
	}
	defer zeroScalars(uPr)

	// Steps 4 and 7 (chain and T̂) in closed form: α_i = u'_i·α_{i-1} + r̂_i,
	// β_i = u'_i·β_{i-1}, Ĉ_i = α_i·G + β_i·H_0 and T̂_i = (ω̂_i +
	// ω'_i·α_{i-1})·G + (ω'_i·β_{i-1})·H_0: 2n independent two-point MSMs
	// instead of a sequential chain.
	alpha := make([]*group.Scalar, n+1)
	beta := make([]*group.Scalar, n+1)
	alpha[0], beta[0] = group.NewScalar(), group.ScalarFromUint64(1)
	for i := 1; i <= n; i++ {
		alpha[i] = group.NewScalar().Multiply(uPr[i-1], alpha[i-1])
		alpha[i].Add(alpha[i], nc.rHat[i-1])
		beta[i] = group.NewScalar().Multiply(uPr[i-1], beta[i-1])
	}
	defer zeroScalars(alpha, beta)
	p.cHat = make([]*group.Element, n)
	p.tHat = make([]*group.Element, n)
	base2 := []*group.Element{g, gens[0]}
	parallelRange(n, func(lo, hi int) {
		a, b := group.NewScalar(), group.NewScalar()
		for i := lo; i < hi; i++ {
			p.cHat[i] = group.NewElement().MultiScalarMult([]*group.Scalar{alpha[i+1], beta[i+1]}, base2)
			a.Multiply(nc.omPrim[i], alpha[i])
			a.Add(a, nc.omHat[i])
			b.Multiply(nc.omPrim[i], beta[i])
			p.tHat[i] = group.NewElement().MultiScalarMult([]*group.Scalar{a, b}, base2)
		}
		a.Zero()
		b.Zero()
	})

	// Step 7: T_1, T_2 fixed-base; T_3, T_4A,j, T_4B,j as chunked parallel
	// constant-time MSMs over n+1 points each.
	p.t1 = group.NewElement().ScalarBaseMult(nc.om1)
	p.t2 = group.NewElement().ScalarBaseMult(nc.om2)
	p.t4a = make([]*group.Element, w)
	p.t4b = make([]*group.Element, w)
	jobs := make([]msmJob, 0, 2*w+1)
	negOm4 := make([]*group.Scalar, w)
	defer zeroScalars(negOm4)
	withNonce := func(first *group.Scalar) []*group.Scalar {
		return append([]*group.Scalar{first}, nc.omPrim...)
	}
	jobs = append(jobs, msmJob{withNonce(nc.om3), append([]*group.Element{g}, gens[1:]...), &p.t3})
	for j := range w {
		negOm4[j] = group.NewScalar().Negate(nc.om4[j])
		as := make([]*group.Element, n+1)
		bs := make([]*group.Element, n+1)
		as[0], bs[0] = g, st.Keys[j]
		for i := range n {
			as[i+1], bs[i+1] = st.Outputs[i][j].A, st.Outputs[i][j].B
		}
		sc := withNonce(negOm4[j])
		jobs = append(jobs, msmJob{sc, as, &p.t4a[j]}, msmJob{sc, bs, &p.t4b[j]})
	}
	constantTimeMSMs(jobs)

	// Step 5: aggregates. r̂ = α_n (closed form).
	rBar, rTil := group.NewScalar(), group.NewScalar()
	tmp := group.NewScalar()
	for k := range n {
		rBar.Add(rBar, nc.r[k])
		rTil.Add(rTil, tmp.Multiply(nc.r[k], u[k]))
	}
	rStar := make([]*group.Scalar, w)
	for j := range w {
		rStar[j] = group.NewScalar()
		for i := range n {
			rStar[j].Add(rStar[j], tmp.Multiply(wit.R[i][j], uPr[i]))
		}
	}
	defer zeroScalars([]*group.Scalar{rBar, rTil, tmp}, rStar)

	// Step 8: c over the published encodings (C_k are already in enc).
	p.enc = enc
	p.encodePoints(n)
	c := challenge(eta, n, w, p.enc)

	// Step 9: responses s = ω + c·x.
	resp := func(om, x *group.Scalar) *group.Scalar {
		s := group.NewScalar().Multiply(c, x)
		return s.Add(s, om)
	}
	p.s1 = resp(nc.om1, rBar)
	p.s2 = resp(nc.om2, alpha[n])
	p.s3 = resp(nc.om3, rTil)
	p.s4 = make([]*group.Scalar, w)
	for j := range w {
		p.s4[j] = resp(nc.om4[j], rStar[j])
	}
	p.sHat = make([]*group.Scalar, n)
	p.sPr = make([]*group.Scalar, n)
	for i := range n {
		p.sHat[i] = resp(nc.omHat[i], nc.rHat[i])
		p.sPr[i] = resp(nc.omPrim[i], uPr[i])
	}
	p.encodeScalars()
	return p, nil
}
