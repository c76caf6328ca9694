package shuffle

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// checkAccept requires both verifiers to accept.
func checkAccept(t *testing.T, st *Statement, p *Proof, seed string) {
	t.Helper()
	if err := Verify(st, p, newDetReader(seed)); err != nil {
		t.Fatalf("batched verifier rejects an honest proof: %v", err)
	}
	failed, err := verifyEach(st, p, defaultSuite)
	if err != nil || len(failed) != 0 {
		t.Fatalf("unbatched verifier: failed %v, err %v", failed, err)
	}
}

func TestShuffleProveVerify(t *testing.T) {
	for _, n := range []int{1, 2, 3, 100} {
		for w := 1; w <= 4; w++ {
			if n == 100 && w > 2 && testing.Short() {
				continue
			}
			t.Run(fmt.Sprintf("n=%d/w=%d", n, w), func(t *testing.T) {
				f := newFixture(t, fmt.Sprintf("rt %d %d", n, w), n, w)
				// The outputs decrypt to the inputs' messages permuted by Pi.
				for i := range n {
					for j := range w {
						if decrypt(f.sk[j], f.st.Outputs[i][j]).Equal(f.msgs[f.wit.Pi[i]][j]) != 1 {
							t.Fatalf("output (%d,%d) does not decrypt to input %d's message", i, j, f.wit.Pi[i])
						}
					}
				}
				p, err := Prove(f.st, f.wit, newDetReader("prove"))
				if err != nil {
					t.Fatal(err)
				}
				b, err := p.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if len(b) != ProofSize(n, w) {
					t.Fatalf("proof is %d bytes, ProofSize says %d", len(b), ProofSize(n, w))
				}
				q, err := Parse(b, n, w)
				if err != nil {
					t.Fatal(err)
				}
				checkAccept(t, f.st, q, "verify")
			})
		}
	}
}

func TestWitnessDirection(t *testing.T) {
	// A 3-cycle is not an involution, so it tells Pi from its inverse.
	f := newFixture(t, "dir", 3, 1).withPermutation(t, "dir3", []int{1, 2, 0})
	phi, err := f.wit.InputToOutput()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 0, 1}; !slices.Equal(phi, want) {
		t.Fatalf("InputToOutput of Pi = [1 2 0] is %v, want %v", phi, want)
	}
	for p := range 3 {
		// Input p's message comes out at output phi[p] (§4.2's π_s).
		if decrypt(f.sk[0], f.st.Outputs[phi[p]][0]).Equal(f.msgs[p][0]) != 1 {
			t.Fatalf("input %d's message is not at output %d", p, phi[p])
		}
	}
	back, err := Invert(phi)
	if err != nil || !slices.Equal(back, f.wit.Pi) {
		t.Fatalf("Invert(Invert(Pi)) = %v, %v; want %v", back, err, f.wit.Pi)
	}
	if _, err := Invert([]int{0, 0, 1}); !errors.Is(err, ErrWitness) {
		t.Fatalf("Invert accepted a non-permutation: %v", err)
	}
	// A proof made with the inverse permutation as witness must be refused.
	bad := &Witness{Pi: phi, R: f.wit.R}
	if _, err := Prove(f.st, bad, newDetReader("p")); err == nil {
		t.Fatal("Prove accepted the inverse permutation of a 3-cycle")
	}
	p, err := Prove(f.st, f.wit, newDetReader("p"))
	if err != nil {
		t.Fatal(err)
	}
	checkAccept(t, f.st, p, "v")
}

func TestWitnessClose(t *testing.T) {
	f := newFixture(t, "close", 3, 2)
	r := f.wit.R[0][0]
	f.wit.Close()
	if r.Equal(group.NewScalar()) != 1 {
		t.Fatal("Close left a re-encryption scalar non-zero")
	}
	if f.wit.Pi != nil || f.wit.R != nil {
		t.Fatal("Close left the witness populated")
	}
}

// TestLarge runs n = 4000, w = 4 (80 017 points in the batched MSM, more
// than one Pippenger piece) with RIFFLE_LONG=1.
func TestLarge(t *testing.T) {
	if !long() {
		t.Skip("RIFFLE_LONG=1 to run")
	}
	f := newFixture(t, "large", 4000, 4)
	p, err := Prove(f.st, f.wit, newDetReader("large"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(f.st, p, nil); err != nil {
		t.Fatal(err)
	}
	bad := cloneStatement(f.st)
	bad.Outputs[3999][3].A = group.NewElement().Add(bad.Outputs[3999][3].A, group.Base())
	q, err := prove(bad, f.wit, newDetReader("large bad"), defaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(bad, q, nil); !errors.Is(err, ErrProofInvalid) {
		t.Fatalf("tampered large proof: %v", err)
	}
}
