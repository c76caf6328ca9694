package shuffle

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

func reversal(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = n - 1 - i
	}
	return p
}

// threeCycle is output 0 ← input 1, 1 ← 2, 2 ← 0, the rest fixed.
func threeCycle(n int) []int {
	p := identity(n)
	p[0], p[1], p[2] = 1, 2, 0
	return p
}

func proveAndCheck(t *testing.T, f *fixture) *Proof {
	t.Helper()
	p, err := Prove(f.st, f.wit, newDetReader("pos "+t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	if got := outcome(t, f.st, p); got != nil {
		t.Fatalf("honest proof fails %v", got)
	}
	return p
}

// POS-1 and POS-2.
func TestPositive(t *testing.T) {
	for _, n := range []int{1, 2, 3, 17} {
		for _, w := range []int{1, 2, 5} {
			base := newFixture(t, fmt.Sprintf("pos %d %d", n, w), n, w)
			perms := map[string][]int{"identity": identity(n), "reversal": reversal(n), "random": base.wit.Pi}
			if n >= 3 {
				perms["3-cycle"] = threeCycle(n)
			}
			for name, pi := range perms {
				t.Run(fmt.Sprintf("n=%d/w=%d/%s", n, w, name), func(t *testing.T) {
					proveAndCheck(t, base.withPermutation(t, name, pi))
				})
			}
		}
	}
}

// POS-3: identity ciphertext components in the inputs, equal keys.
func TestPositiveIdentityComponentsEqualKeys(t *testing.T) {
	f := newFixture(t, "pos3", 4, 3)
	st := cloneStatement(f.st)
	st.Keys[2] = st.Keys[0]
	st.Inputs[1][0] = group.Ciphertext{A: group.NewElement(), B: group.NewElement()} // trivial encryption of O
	st.Inputs[2][1].A = group.NewElement()                                           // ρ = 0
	g := (&fixture{st: st, msgs: f.msgs, sk: f.sk}).withPermutation(t, "pos3 pi", threeCycle(4))
	proveAndCheck(t, g)
	// And an output equal to the identity: output 0 ← input 1 with r' = 0.
	g.wit.R[0][0] = group.NewScalar()
	g.st.Outputs[0] = rerandomise(g.st.Keys, g.st.Inputs[g.wit.Pi[0]], g.wit.R[0])
	if !group.IsIdentity(g.st.Outputs[0][0].A) || !group.IsIdentity(g.st.Outputs[0][0].B) {
		t.Fatal("construction did not make an identity output")
	}
	proveAndCheck(t, g)
}

// POS-4: the closed-form parallel chain of prove and the sequential chain of
// the reference prover give identical bytes from the same randomness.
func TestClosedFormChainMatchesSequential(t *testing.T) {
	for _, nw := range [][2]int{{1, 1}, {2, 3}, {5, 2}, {33, 1}} {
		f := newFixture(t, fmt.Sprintf("pos4 %v", nw), nw[0], nw[1])
		p, err := prove(f.st, f.wit, newDetReader("same"), defaultSuite)
		if err != nil {
			t.Fatal(err)
		}
		q := refProve(t, f.st, f.wit, newDetReader("same"), refConfig{})
		if !bytes.Equal(p.enc, q.enc) {
			t.Fatalf("n, w = %v: production and reference provers differ", nw)
		}
	}
}
