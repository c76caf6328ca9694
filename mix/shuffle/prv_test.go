package shuffle

import (
	"crypto/rand"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

func long() bool { return os.Getenv("RIFFLE_LONG") == "1" }

// PRV-1: fresh nonces in every proof (a repeat would reveal π).
func TestProverNoncesFresh(t *testing.T) {
	proofs := 2000 // 10⁴ with RIFFLE_LONG=1
	if long() {
		proofs = 10000
	}
	f := newFixture(t, "prv1", 2, 1)
	seenT1, seenC1 := map[string]bool{}, map[string]bool{}
	for range proofs {
		p, err := prove(f.st, f.wit, rand.Reader, defaultSuite)
		if err != nil {
			t.Fatal(err)
		}
		t1, c1 := string(p.t1.Bytes()), string(p.c[0].Bytes())
		if seenT1[t1] || seenC1[c1] {
			t.Fatal("repeated T_1 or C_1 across proofs of one statement")
		}
		seenT1[t1], seenC1[c1] = true, true
	}
}

// chiSquare6 returns the χ² statistic of the permutation counts of n = 3.
func chiSquare6(counts map[[3]int]int, total int) float64 {
	exp := float64(total) / 6
	x := 0.0
	for _, c := range counts {
		d := float64(c) - exp
		x += d * d / exp
	}
	return x + exp*float64(6-len(counts)) // permutations never seen
}

// χ²(5 degrees of freedom) exceeds 25.7 with probability 10⁻⁴.
const chi5Critical = 25.7

// PRV-2: the permutation is uniform.
func TestPermutationUniform(t *testing.T) {
	const total = 60000
	counts := map[[3]int]int{}
	for range total {
		p, err := uniformPermutation(3, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		counts[[3]int(p)]++
	}
	if x := chiSquare6(counts, total); x > chi5Critical {
		t.Fatalf("χ² = %.1f over 6 permutations, counts %v", x, counts)
	}
	// The statistic has teeth: the classic biased shuffle (swap with any
	// position, not only the ones not yet fixed) fails it.
	biased := map[[3]int]int{}
	for range total {
		p := [3]int{0, 1, 2}
		for i := range 3 {
			var b [1]byte
			rand.Read(b[:])
			j := int(b[0]) % 3 // 256 = 3·85 + 1: nearly uniform, the bias is the algorithm's
			p[i], p[j] = p[j], p[i]
		}
		biased[p]++
	}
	if x := chiSquare6(biased, total); x < chi5Critical {
		t.Fatalf("χ² = %.1f does not flag the biased shuffle", x)
	}
}

// The sampler rejects words at or above the largest multiple of the bound.
func TestPermutationRejectionSampling(t *testing.T) {
	// n = 2: one draw with bound 2; 2^64 is a multiple of 2, nothing is
	// rejected. n = 3: the first draw has bound 3 and 2^64 mod 3 = 1, so the
	// word 2^64−1 is rejected and the next one used.
	words := []byte{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // rejected for bound 3
		0, 0, 0, 0, 0, 0, 0, 4, // 4 mod 3 = 1: swap positions 2 and 1
		0, 0, 0, 0, 0, 0, 0, 1, // bound 2: j = 1, no swap
	}
	r := &sliceReader{b: append(words, make([]byte, 8*randBlock)...)}
	p, err := uniformPermutation(3, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 2, 1}; !slices.Equal(p, want) {
		t.Fatalf("permutation %v, want %v", p, want)
	}
}

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// PRV-3: a witness inconsistent with the outputs yields no proof.
func TestProverRefusesWrongWitness(t *testing.T) {
	f := newFixture(t, "prv3", 4, 2)
	wrongR := &Witness{Pi: f.wit.Pi, R: [][]*group.Scalar{f.wit.R[0], f.wit.R[1], f.wit.R[2], {f.wit.R[3][0], one()}}}
	swapped := slices.Clone(f.wit.Pi)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	for name, wit := range map[string]*Witness{
		"wrong scalar":      wrongR,
		"wrong permutation": {Pi: swapped, R: f.wit.R},
	} {
		p, err := Prove(f.st, wit, newDetReader("prv3"))
		if p != nil || !errors.Is(err, ErrProofInvalid) || !errors.Is(err, ErrWitness) {
			t.Fatalf("%s: Prove returned %v, %v", name, p != nil, err)
		}
	}
}

// PRV-4: the prover's files never call VarTime*; no file imports math/rand
// or math/big. Only verify.go (public data) may use variable time.
func TestProverConstantTimeSources(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "math/rand") || path == "math/big" {
				t.Errorf("%s imports %s", name, path)
			}
		}
		if name == "verify.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && strings.Contains(id.Name, "VarTime") {
				t.Errorf("%s: %s uses %s", name, fset.Position(id.Pos()), id.Name)
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("only %d source files checked", checked)
	}
}
