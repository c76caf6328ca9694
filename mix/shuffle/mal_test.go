package shuffle

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// outcome runs both verifiers, requires them to agree (BAT-1) and returns
// the equations that the unbatched verifier reports failing (nil: accepted).
func outcome(t *testing.T, st *Statement, p *Proof) []string {
	t.Helper()
	batchErr := Verify(st, p, newDetReader("weights "+t.Name()))
	failed, err := verifyEach(st, p, defaultSuite)
	if err != nil {
		t.Fatalf("unbatched verifier did not reach the equations: %v", err)
	}
	if (batchErr == nil) != (len(failed) == 0) {
		t.Fatalf("verifiers disagree: batched %v, unbatched fails %v", batchErr, failed)
	}
	if batchErr != nil && !errors.Is(batchErr, ErrProofInvalid) {
		t.Fatalf("batched verifier error %v does not wrap ErrProofInvalid", batchErr)
	}
	return failed
}

func wantFailures(t *testing.T, st *Statement, p *Proof, want ...string) {
	t.Helper()
	got := outcome(t, st, p)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("failing equations %v, want exactly %v", got, want)
	}
}

func sc(v int64) *group.Scalar {
	if v >= 0 {
		return group.ScalarFromUint64(uint64(v))
	}
	return group.NewScalar().Negate(group.ScalarFromUint64(uint64(-v)))
}

func inv(s *group.Scalar) *group.Scalar { return group.NewScalar().Invert(s) }

// matrixOutputs returns X'_i = Σ_k qinv[i][k]·X_k + r'_ij·(G, Y_j) for every
// component: the outputs that make V4 hold when u' = Qᵀu.
func matrixOutputs(st *Statement, qinv [][]*group.Scalar, r [][]*group.Scalar) [][]group.Ciphertext {
	n, w := len(st.Inputs), len(st.Keys)
	out := make([][]group.Ciphertext, n)
	for i := range n {
		mixed := make([]group.Ciphertext, w)
		for j := range w {
			a, b := group.NewElement(), group.NewElement()
			for k := range n {
				a.Add(a, group.NewElement().ScalarMult(qinv[i][k], st.Inputs[k][j].A))
				b.Add(b, group.NewElement().ScalarMult(qinv[i][k], st.Inputs[k][j].B))
			}
			mixed[j] = group.Ciphertext{A: a, B: b}
		}
		out[i] = rerandomise(st.Keys, mixed, r[i])
	}
	return out
}

// transposeTimes returns Qᵀu.
func transposeTimes(q [][]*group.Scalar, u []*group.Scalar) []*group.Scalar {
	n := len(u)
	out := make([]*group.Scalar, n)
	for i := range n {
		out[i] = group.NewScalar()
		for k := range n {
			out[i].Add(out[i], smul(q[k][i], u[k]))
		}
	}
	return out
}

// scaledPermutation returns Q with Q[π(i)][i] = λ_i and its inverse (rows by
// output): qinv[i][π(i)] = λ_i⁻¹.
func scaledPermutation(pi []int, lambda []*group.Scalar) (q, qinv [][]*group.Scalar) {
	q, qinv = permMatrix(pi), permMatrix(pi)
	for i := range qinv {
		for k := range qinv[i] {
			qinv[i][k] = group.NewScalar()
		}
	}
	for i, k := range pi {
		q[k][i] = lambda[i]
		qinv[i][k] = inv(lambda[i])
	}
	return q, qinv
}

func lambdas(n int, head ...*group.Scalar) []*group.Scalar {
	l := slices.Clone(head)
	for len(l) < n {
		l = append(l, one())
	}
	return l
}

const malN, malW = 5, 3

func TestMaliciousProvers(t *testing.T) {
	base := newFixture(t, "mal", malN, malW).withPermutation(t, "mal pi", []int{1, 2, 0, 4, 3})
	pi, r := base.wit.Pi, base.wit.R
	honest := func(t *testing.T, st *Statement) *Proof {
		p, err := prove(st, base.wit, newDetReader("mal prove "+t.Name()), defaultSuite)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := randPoint(t, newDetReader("D"))
	pi2 := []int{2, 0, 1, 4, 3} // ≠ pi

	t.Run("honest", func(t *testing.T) { wantFailures(t, base.st, honest(t, base.st)) })

	for j := range malW {
		t.Run(fmt.Sprintf("MAL-1/j=%d", j+1), func(t *testing.T) {
			st := cloneStatement(base.st)
			st.Outputs[0][j].B = group.NewElement().Add(st.Outputs[0][j].B, d)
			wantFailures(t, st, honest(t, st), fmt.Sprintf("V4B_%d", j+1))
		})
	}
	t.Run("MAL-2", func(t *testing.T) {
		st := cloneStatement(base.st)
		st.Outputs[0][0].A = group.NewElement().Add(st.Outputs[0][0].A, d)
		wantFailures(t, st, honest(t, st), "V4A_1")
	})
	for j := range malW {
		t.Run(fmt.Sprintf("MAL-3/j=%d", j+1), func(t *testing.T) {
			st := cloneStatement(base.st)
			for i := range malN {
				st.Outputs[i][j] = rerandomise(st.Keys, st.Inputs[pi2[i]], r[i])[j]
			}
			wantFailures(t, st, honest(t, st), fmt.Sprintf("V4A_%d", j+1), fmt.Sprintf("V4B_%d", j+1))
		})
	}
	t.Run("MAL-4", func(t *testing.T) {
		st := cloneStatement(base.st)
		const j, jj = 1, 2
		wrongKeys := slices.Clone(st.Keys)
		wrongKeys[j] = st.Keys[jj]
		for i := range malN {
			st.Outputs[i][j] = rerandomise(wrongKeys, st.Inputs[pi[i]], r[i])[j]
		}
		wantFailures(t, st, honest(t, st), "V4B_2")
	})

	// MAL-5: linear mix Q = I but Q_{1,1} = 2, Q_{2,1} = −1.
	linearMix := func(n int) (q, qinv [][]*group.Scalar) {
		q, qinv = permMatrix(identity(n)), permMatrix(identity(n))
		q[0][0], q[1][0] = sc(2), sc(-1)
		half := inv(sc(2))
		qinv[0][0], qinv[1][0] = half, half // X'_1 = ½X_1, X'_2 = ½X_1 + X_2
		return q, qinv
	}
	malMatrix := func(t *testing.T, q, qinv [][]*group.Scalar, cfg refConfig) (*Statement, *Proof) {
		st := cloneStatement(base.st)
		st.Outputs = matrixOutputs(st, qinv, r)
		cfg.commitQ = q
		cfg.uPrime = func(u []*group.Scalar) []*group.Scalar { return transposeTimes(q, u) }
		return st, refProve(t, st, base.wit, newDetReader("mal ref "+t.Name()), cfg)
	}
	t.Run("MAL-5", func(t *testing.T) {
		q, qinv := linearMix(malN)
		st, p := malMatrix(t, q, qinv, refConfig{})
		// The messages really are mixed: output 2 decrypts to ½M_1 + M_2.
		want := group.NewElement().ScalarMult(inv(sc(2)), base.msgs[0][0])
		want.Add(want, base.msgs[1][0])
		if decrypt(base.sk[0], st.Outputs[1][0]).Equal(want) != 1 {
			t.Fatal("MAL-5 construction does not mix the messages")
		}
		wantFailures(t, st, p, "V2")
	})
	t.Run("MAL-6", func(t *testing.T) {
		q, qinv := scaledPermutation(pi, lambdas(malN, sc(2), inv(sc(2))))
		st, p := malMatrix(t, q, qinv, refConfig{})
		wantFailures(t, st, p, "V1")
	})
	t.Run("MAL-7", func(t *testing.T) {
		st := cloneStatement(base.st)
		for i := range malN {
			st.Outputs[i] = rerandomise(st.Keys, st.Inputs[pi2[i]], r[i])
		}
		cfg := refConfig{
			commitQ: permMatrix(pi),
			uPrime: func(u []*group.Scalar) []*group.Scalar {
				out := make([]*group.Scalar, malN)
				for i := range out {
					out[i] = u[pi2[i]]
				}
				return out
			},
		}
		wantFailures(t, st, refProve(t, st, base.wit, newDetReader("mal7"), cfg), "V3")
	})
	t.Run("MAL-7b", func(t *testing.T) {
		lam := lambdas(malN, sc(3), inv(sc(3)))
		_, qinv := scaledPermutation(pi, lam)
		st := cloneStatement(base.st)
		st.Outputs = matrixOutputs(st, qinv, r)
		cfg := refConfig{uPrime: func(u []*group.Scalar) []*group.Scalar {
			out := make([]*group.Scalar, malN)
			for i := range out {
				out[i] = smul(lam[i], u[pi[i]])
			}
			return out
		}}
		wantFailures(t, st, refProve(t, st, base.wit, newDetReader("mal7b"), cfg), "V3")
	})
	t.Run("MAL-8", func(t *testing.T) {
		q, qinv := linearMix(malN)
		st, p := malMatrix(t, q, qinv, refConfig{forgeChainEnd: true})
		wantFailures(t, st, p, fmt.Sprintf("V5_%d", malN))
	})
	for name, start := range map[string]func([]*group.Element) *group.Element{
		"G":   func([]*group.Element) *group.Element { return group.Base() },
		"H_1": func(g []*group.Element) *group.Element { return g[1] },
	} {
		t.Run("MAL-9/"+name, func(t *testing.T) {
			p := refProve(t, base.st, base.wit, newDetReader("mal9"), refConfig{chainStart: start})
			wantFailures(t, base.st, p, "V2", "V5_1")
		})
	}
	t.Run("MAL-10", func(t *testing.T) {
		p := mal10(t, base.st, base.wit, d)
		wantFailures(t, base.st, p, "V1", "V2")
	})
}

// mal10 shifts T_1 by +D and T_2 by −D before c is hashed.
func mal10(t *testing.T, st *Statement, wit *Witness, d *group.Element) *Proof {
	return refProve(t, st, wit, newDetReader("mal10"), refConfig{tamperT: func(p *Proof) {
		p.t1 = group.NewElement().Add(p.t1, d)
		p.t2 = group.NewElement().Subtract(p.t2, d)
	}})
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// TestMAL6NegationN2 is MAL-6's n = 2 variant: Q = −I negates every message.
func TestMAL6NegationN2(t *testing.T) {
	base := newFixture(t, "mal6-2", 2, 2).withPermutation(t, "id", []int{0, 1})
	lam := []*group.Scalar{sc(-1), sc(-1)}
	q, qinv := scaledPermutation([]int{0, 1}, lam)
	st := cloneStatement(base.st)
	st.Outputs = matrixOutputs(st, qinv, base.wit.R)
	neg := group.NewElement().Negate(base.msgs[0][0])
	if decrypt(base.sk[0], st.Outputs[0][0]).Equal(neg) != 1 {
		t.Fatal("construction does not negate the message")
	}
	cfg := refConfig{commitQ: q, uPrime: func(u []*group.Scalar) []*group.Scalar { return transposeTimes(q, u) }}
	wantFailures(t, st, refProve(t, st, base.wit, newDetReader("m"), cfg), "V1")
}
