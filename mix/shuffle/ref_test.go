package shuffle

import (
	"io"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// This file holds a second, deliberately plain prover, written straight from
// docs/proto-shuffle.md §4.2 with the sequential chain and no parallelism. With
// its hooks left nil it must produce the same bytes as prove (POS-4); with
// hooks set it is the "modified prover" of the MAL tests (docs/proto-shuffle.md §5.3), which
// computes the Fiat–Shamir hashes honestly over what it publishes.

type refConfig struct {
	// commitQ[k][i] is the matrix committed in C_k = r_k·G + Σ_i Q_{k,i}·H_i;
	// nil means the permutation matrix of the witness.
	commitQ [][]*group.Scalar
	// uPrime maps u to the u' used in the chain, T̂, responses and r*; nil
	// means u'_i = u_{Pi[i]}.
	uPrime func(u []*group.Scalar) []*group.Scalar
	// chainStart replaces Ĉ_0 = H_0 (MAL-9).
	chainStart func(gens []*group.Element) *group.Element
	// forgeChainEnd replaces Ĉ_n by r̂·G + U·H_0 (MAL-8).
	forgeChainEnd bool
	// tamperT edits the T values before c is hashed (MAL-10).
	tamperT func(p *Proof)
	suite   *suite
}

func one() *group.Scalar { return group.ScalarFromUint64(1) }

func smul(a, b *group.Scalar) *group.Scalar { return group.NewScalar().Multiply(a, b) }

// permMatrix returns Q with Q[Pi[i]][i] = 1.
func permMatrix(pi []int) [][]*group.Scalar {
	n := len(pi)
	q := make([][]*group.Scalar, n)
	for k := range q {
		q[k] = make([]*group.Scalar, n)
		for i := range q[k] {
			q[k][i] = group.NewScalar()
		}
	}
	for i, k := range pi {
		q[k][i] = one()
	}
	return q
}

func refProve(t testing.TB, st *Statement, wit *Witness, rand io.Reader, cfg refConfig) *Proof {
	t.Helper()
	s := defaultSuite
	if cfg.suite != nil {
		s = *cfg.suite
	}
	n, w, err := st.check()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := drawNonces(n, w, rand)
	if err != nil {
		t.Fatal(err)
	}
	gens := s.gens(n + 1)
	sigma := statementDigest(st, s, n, w)
	p := &Proof{n: n, w: w}

	q := cfg.commitQ
	if q == nil {
		q = permMatrix(wit.Pi)
	}
	for k := range n {
		c := group.NewElement().ScalarBaseMult(nc.r[k])
		for i := range n {
			c.Add(c, group.NewElement().ScalarMult(q[k][i], gens[i+1]))
		}
		p.c = append(p.c, c)
	}
	p.enc = make([]byte, newLayout(n, w).end)
	var encC []byte
	for _, c := range p.c {
		encC = append(encC, c.Bytes()...)
	}
	eta, u := challengeVector(sigma, n, encC)
	var uPr []*group.Scalar
	if cfg.uPrime != nil {
		uPr = cfg.uPrime(u)
	} else {
		for i := range n {
			uPr = append(uPr, u[wit.Pi[i]])
		}
	}

	// Sequential chain: Ĉ_i = r̂_i·G + u'_i·Ĉ_{i−1}, T̂_i = ω̂_i·G + ω'_i·Ĉ_{i−1}.
	prev := gens[0]
	if cfg.chainStart != nil {
		prev = cfg.chainStart(gens)
	}
	for i := range n {
		ch := group.NewElement().ScalarBaseMult(nc.rHat[i])
		ch.Add(ch, group.NewElement().ScalarMult(uPr[i], prev))
		th := group.NewElement().ScalarBaseMult(nc.omHat[i])
		th.Add(th, group.NewElement().ScalarMult(nc.omPrim[i], prev))
		p.cHat = append(p.cHat, ch)
		p.tHat = append(p.tHat, th)
		prev = ch
	}
	// r̂ = Σ r̂_i·v_i with v_i = Π_{m>i} u'_m.
	v := make([]*group.Scalar, n)
	v[n-1] = one()
	for i := n - 1; i > 0; i-- {
		v[i-1] = smul(uPr[i], v[i])
	}
	rHat := group.NewScalar()
	for i := range n {
		rHat.Add(rHat, smul(nc.rHat[i], v[i]))
	}
	if cfg.forgeChainEnd {
		uProd := one()
		for _, x := range u {
			uProd.Multiply(uProd, x)
		}
		e := group.NewElement().ScalarBaseMult(rHat)
		p.cHat[n-1] = e.Add(e, group.NewElement().ScalarMult(uProd, gens[0]))
	}
	rBar, rTil := group.NewScalar(), group.NewScalar()
	for k := range n {
		rBar.Add(rBar, nc.r[k])
		rTil.Add(rTil, smul(nc.r[k], u[k]))
	}
	rStar := make([]*group.Scalar, w)
	for j := range w {
		rStar[j] = group.NewScalar()
		for i := range n {
			rStar[j].Add(rStar[j], smul(wit.R[i][j], uPr[i]))
		}
	}

	p.t1 = group.NewElement().ScalarBaseMult(nc.om1)
	p.t2 = group.NewElement().ScalarBaseMult(nc.om2)
	p.t3 = group.NewElement().ScalarBaseMult(nc.om3)
	for i := range n {
		p.t3.Add(p.t3, group.NewElement().ScalarMult(nc.omPrim[i], gens[i+1]))
	}
	for j := range w {
		negOm := group.NewScalar().Negate(nc.om4[j])
		a := group.NewElement().ScalarBaseMult(negOm)
		b := group.NewElement().ScalarMult(negOm, st.Keys[j])
		for i := range n {
			a.Add(a, group.NewElement().ScalarMult(nc.omPrim[i], st.Outputs[i][j].A))
			b.Add(b, group.NewElement().ScalarMult(nc.omPrim[i], st.Outputs[i][j].B))
		}
		p.t4a = append(p.t4a, a)
		p.t4b = append(p.t4b, b)
	}
	if cfg.tamperT != nil {
		cfg.tamperT(p)
	}
	p.encodePoints(0)
	c := challenge(eta, n, w, p.enc)
	resp := func(om, x *group.Scalar) *group.Scalar {
		r := smul(c, x)
		return r.Add(r, om)
	}
	p.s1, p.s2, p.s3 = resp(nc.om1, rBar), resp(nc.om2, rHat), resp(nc.om3, rTil)
	for j := range w {
		p.s4 = append(p.s4, resp(nc.om4[j], rStar[j]))
	}
	for i := range n {
		p.sHat = append(p.sHat, resp(nc.omHat[i], nc.rHat[i]))
		p.sPr = append(p.sPr, resp(nc.omPrim[i], uPr[i]))
	}
	p.encodeScalars()
	return p
}
