package shuffle

import (
	"crypto/rand"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/internal/group"
)

// Everything in this file works on public data and may use variable-time
// arithmetic. It is the only file of the package allowed to.

// challenges holds what the verifier recomputes (§5.2).
type challenges struct {
	n, w  int
	gens  []*group.Element // H_0 … H_n
	u     []*group.Scalar
	c     *group.Scalar
	uProd *group.Scalar // U = Π u_k
}

// prepare validates the statement and the proof's shape against it and
// recomputes σ, η, u, c and U from the statement and the received bytes.
func prepare(st *Statement, p *Proof, s suite) (*challenges, error) {
	n, w, err := st.check()
	if err != nil {
		return nil, err
	}
	if p == nil || p.enc == nil {
		return nil, fmt.Errorf("%w: nil proof", ErrProofEncoding)
	}
	// n and w come from the statement, never from the proof (P10).
	if p.n != n || p.w != w {
		return nil, fmt.Errorf("%w: proof for n = %d, w = %d, statement has n = %d, w = %d", ErrProofEncoding, p.n, p.w, n, w)
	}
	l := newLayout(n, w)
	sigma := statementDigest(st, s, n, w)
	eta, u := challengeVector(sigma, n, p.enc[l.c:l.cHat])
	ch := &challenges{n: n, w: w, gens: s.gens(n + 1), u: u, c: challenge(eta, n, w, p.enc)}
	ch.uProd = group.ScalarFromUint64(1)
	for _, uk := range u {
		ch.uProd.Multiply(ch.uProd, uk)
	}
	return ch, nil
}

// Verify checks a proof against a statement with the batched verifier of
// docs/proto-shuffle.md §6: one chunked multi-scalar multiplication over
// 4nw + 4n + 3w + 5 points, the equations weighted by fresh 128-bit weights
// drawn from rand after the proof is fixed. rand nil means crypto/rand; tests
// may inject a reader, production must not pass anything predictable.
func Verify(st *Statement, p *Proof, rand io.Reader) error {
	return verify(st, p, rand, defaultSuite)
}

func verify(st *Statement, p *Proof, rnd io.Reader, s suite) error {
	if rnd == nil {
		rnd = rand.Reader
	}
	ch, err := prepare(st, p, s)
	if err != nil {
		return err
	}
	return verifyBatched(st, p, ch, func() (*group.Scalar, error) { return group.RandomWeight(rnd) }, group.VarTimeMSM)
}

// verifyBatched computes Σ_e δ_e·E_e as one MSM with the coefficients of
// §6.1 and accepts iff it is the identity. weight is called 3 + 2w + n
// times, in the order δ_1, δ_2, δ_3, δ_4A,1..w, δ_4B,1..w, δ_5,1..n; msm is
// group.VarTimeMSM except in tests of the MSM variants and chunk sizes.
func verifyBatched(st *Statement, p *Proof, ch *challenges, weight func() (*group.Scalar, error),
	msm func([]*group.Scalar, []*group.Element) *group.Element) error {
	n, w, c, u := ch.n, ch.w, ch.c, ch.u
	nw := 3 + 2*w + n
	d := make([]*group.Scalar, nw)
	for i := range d {
		var err error
		if d[i], err = weight(); err != nil {
			return fmt.Errorf("shuffle: verifier weights: %w", err)
		}
	}
	d1, d2, d3 := d[0], d[1], d[2]
	d4a, d4b, d5 := d[3:3+w], d[3+w:3+2*w], d[3+2*w:]

	total := 4*n*w + 4*n + 3*w + 5
	sc := make([]*group.Scalar, 0, total)
	pt := make([]*group.Element, 0, total)
	add := func(s *group.Scalar, e *group.Element) {
		sc = append(sc, s)
		pt = append(pt, e)
	}
	mul := func(a, b *group.Scalar) *group.Scalar { return group.NewScalar().Multiply(a, b) }
	neg := func(a *group.Scalar) *group.Scalar { return group.NewScalar().Negate(a) }

	// G: δ1·s1 + δ2·s2 + δ3·s3 − Σ_j δ4A,j·s4,j + Σ_i δ5,i·ŝ_i
	cg := mul(d1, p.s1)
	cg.Add(cg, mul(d2, p.s2))
	cg.Add(cg, mul(d3, p.s3))
	for j := range w {
		cg.Subtract(cg, mul(d4a[j], p.s4[j]))
	}
	for i := range n {
		cg.Add(cg, mul(d5[i], p.sHat[i]))
	}
	add(cg, group.Base())
	// H_0: δ2·c·U + δ5,1·s'_1
	ch0 := mul(mul(d2, c), ch.uProd)
	add(ch0.Add(ch0, mul(d5[0], p.sPr[0])), ch.gens[0])
	// H_i: δ1·c + δ3·s'_i
	d1c := mul(d1, c)
	for i := range n {
		add(group.NewScalar().Add(d1c, mul(d3, p.sPr[i])), ch.gens[i+1])
	}
	// Y_j: −δ4B,j·s4,j
	for j := range w {
		add(neg(mul(d4b[j], p.s4[j])), st.Keys[j])
	}
	// C_k: −c·(δ1 + δ3·u_k); inputs: −δ4A,j·c·u_k, −δ4B,j·c·u_k
	cu := make([]*group.Scalar, n)
	for k := range n {
		cu[k] = neg(mul(c, u[k]))
		x := mul(d3, u[k])
		add(neg(mul(c, x.Add(x, d1))), p.c[k])
	}
	// Ĉ_i: −δ5,i·c + δ5,i+1·s'_{i+1} (i < n); Ĉ_n: −c·(δ5,n + δ2)
	for i := range n - 1 {
		x := mul(d5[i+1], p.sPr[i+1])
		add(x.Subtract(x, mul(d5[i], c)), p.cHat[i])
	}
	x := group.NewScalar().Add(d5[n-1], d2)
	add(neg(mul(c, x)), p.cHat[n-1])
	for k := range n {
		for j := range w {
			add(mul(d4a[j], cu[k]), st.Inputs[k][j].A)
			add(mul(d4b[j], cu[k]), st.Inputs[k][j].B)
		}
	}
	// outputs: δ4A,j·s'_i, δ4B,j·s'_i
	for i := range n {
		for j := range w {
			add(mul(d4a[j], p.sPr[i]), st.Outputs[i][j].A)
			add(mul(d4b[j], p.sPr[i]), st.Outputs[i][j].B)
		}
	}
	// T values: −δ
	add(neg(d1), p.t1)
	add(neg(d2), p.t2)
	add(neg(d3), p.t3)
	for j := range w {
		add(neg(d4a[j]), p.t4a[j])
		add(neg(d4b[j]), p.t4b[j])
	}
	for i := range n {
		add(neg(d5[i]), p.tHat[i])
	}
	if len(sc) != total {
		panic(fmt.Sprintf("shuffle: batched MSM has %d points, want %d", len(sc), total))
	}
	if !group.IsIdentity(msm(sc, pt)) {
		return fmt.Errorf("%w: batched check over %d points (n = %d, w = %d)", ErrProofInvalid, total, n, w)
	}
	return nil
}

// verifyEach is the unbatched reference verifier of §5.4: it checks every
// equation on its own and returns the names of those that fail ("V1", "V2",
// "V3", "V4A_j", "V4B_j", "V5_i", 1-based), for tests and diagnostics.
func verifyEach(st *Statement, p *Proof, s suite) ([]string, error) {
	ch, err := prepare(st, p, s)
	if err != nil {
		return nil, err
	}
	n, w, c, u := ch.n, ch.w, ch.c, ch.u
	g := group.Base()
	negC := group.NewScalar().Negate(c)
	var failed []string
	// check reports whether Σ s·P equals want.
	check := func(name string, sc []*group.Scalar, pt []*group.Element, want *group.Element) {
		if group.VarTimeMSM(sc, pt).Equal(want) != 1 {
			failed = append(failed, name)
		}
	}
	// V1: s1·G − c·(Σ C_k − Σ H_i) = T1
	sum := group.NewElement()
	for k := range n {
		sum.Add(sum, p.c[k])
		sum.Subtract(sum, ch.gens[k+1])
	}
	check("V1", []*group.Scalar{p.s1, negC}, []*group.Element{g, sum}, p.t1)
	// V2: s2·G − c·Ĉ_n + c·U·H_0 = T2
	cU := group.NewScalar().Multiply(c, ch.uProd)
	check("V2", []*group.Scalar{p.s2, negC, cU}, []*group.Element{g, p.cHat[n-1], ch.gens[0]}, p.t2)
	// V3: s3·G + Σ s'_i·H_i − Σ c·u_k·C_k = T3
	sc := []*group.Scalar{p.s3}
	pt := []*group.Element{g}
	for i := range n {
		sc = append(sc, p.sPr[i], group.NewScalar().Multiply(negC, u[i]))
		pt = append(pt, ch.gens[i+1], p.c[i])
	}
	check("V3", sc, pt, p.t3)
	// V4A_j, V4B_j: Σ s'_i·X'_ij − s4,j·base − Σ c·u_k·X_kj = T4X,j
	for _, side := range []string{"A", "B"} {
		for j := range w {
			base, want := g, p.t4a[j]
			if side == "B" {
				base, want = st.Keys[j], p.t4b[j]
			}
			sc := []*group.Scalar{group.NewScalar().Negate(p.s4[j])}
			pt := []*group.Element{base}
			for i := range n {
				out, in := st.Outputs[i][j].A, st.Inputs[i][j].A
				if side == "B" {
					out, in = st.Outputs[i][j].B, st.Inputs[i][j].B
				}
				sc = append(sc, p.sPr[i], group.NewScalar().Multiply(negC, u[i]))
				pt = append(pt, out, in)
			}
			check(fmt.Sprintf("V4%s_%d", side, j+1), sc, pt, want)
		}
	}
	// V5_i: ŝ_i·G + s'_i·Ĉ_{i−1} − c·Ĉ_i = T̂_i, Ĉ_0 = H_0
	prev := ch.gens[0]
	for i := range n {
		check(fmt.Sprintf("V5_%d", i+1), []*group.Scalar{p.sHat[i], p.sPr[i], negC}, []*group.Element{g, prev, p.cHat[i]}, p.tHat[i])
		prev = p.cHat[i]
	}
	return failed, nil
}
