package shuffle

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// mustFail requires both verifiers to reject the proof for st.
func mustFail(t *testing.T, st *Statement, p *Proof, what string) {
	t.Helper()
	if failed := outcome(t, st, p); len(failed) == 0 {
		t.Fatalf("%s: accepted", what)
	}
}

func TestTranscriptBinding(t *testing.T) {
	const n, w = 4, 3
	f := newFixture(t, "bind", n, w)
	p, err := Prove(f.st, f.wit, newDetReader("bind"))
	if err != nil {
		t.Fatal(err)
	}
	r := newDetReader("bind edits")
	edit := func(e func(st *Statement)) *Statement {
		st := cloneStatement(f.st)
		e(st)
		return st
	}
	// BIND-1
	mustFail(t, edit(func(st *Statement) { st.Context = append(st.Context, 0) }), p, "changed context")
	// BIND-2
	mustFail(t, edit(func(st *Statement) { st.Outputs[0], st.Outputs[2] = st.Outputs[2], st.Outputs[0] }), p, "swapped outputs")
	mustFail(t, edit(func(st *Statement) { st.Inputs[1], st.Inputs[3] = st.Inputs[3], st.Inputs[1] }), p, "swapped inputs")
	mustFail(t, edit(func(st *Statement) { st.Outputs[1][0], st.Outputs[1][2] = st.Outputs[1][2], st.Outputs[1][0] }), p, "swapped components")
	mustFail(t, edit(func(st *Statement) { st.Keys[0], st.Keys[1] = st.Keys[1], st.Keys[0] }), p, "swapped keys")
	mustFail(t, edit(func(st *Statement) { st.Keys[2] = randPoint(t, r) }), p, "replaced key")
	// BIND-3: a different valid re-encryption of the same plaintext.
	st3 := edit(func(st *Statement) {
		rr := []*group.Scalar{mustScalar(t, r), mustScalar(t, r), mustScalar(t, r)}
		st.Outputs[2] = rerandomise(st.Keys, st.Outputs[2], rr)
	})
	for j := range w {
		if decrypt(f.sk[j], st3.Outputs[2][j]).Equal(decrypt(f.sk[j], f.st.Outputs[2][j])) != 1 {
			t.Fatal("BIND-3 construction changed the plaintext")
		}
	}
	mustFail(t, st3, p, "re-encrypted output")
	// BIND-4: each proof point replaced by another valid point, each scalar
	// by itself + 1.
	good, _ := p.MarshalBinary()
	points, scalars := proofOffsets(n, w)
	for class, offs := range points {
		for k, o := range offs {
			b := bytes.Clone(good)
			copy(b[o:], randPoint(t, r).Bytes())
			q, err := Parse(b, n, w)
			if err != nil {
				t.Fatal(err)
			}
			mustFail(t, f.st, q, fmt.Sprintf("%s[%d] replaced", class, k))
		}
	}
	for class, offs := range scalars {
		for k, o := range offs {
			b := bytes.Clone(good)
			s, err := group.DecodeScalar(b[o : o+32])
			if err != nil {
				t.Fatal(err)
			}
			copy(b[o:], s.Add(s, one()).Bytes())
			q, err := Parse(b, n, w)
			if err != nil {
				t.Fatal(err)
			}
			mustFail(t, f.st, q, fmt.Sprintf("%s[%d] + 1", class, k))
		}
	}
	// BIND-5: other generators (and so another generator tag in σ).
	other := otherSuite()
	if err := verify(f.st, p, r, other); err == nil {
		t.Fatal("proof verified under other generators")
	}
	if failed, err := verifyEach(f.st, p, other); err != nil || len(failed) == 0 {
		t.Fatalf("unbatched verifier under other generators: %v, %v", failed, err)
	}
	// And a proof made under the other generators fails under the real ones.
	q := refProve(t, f.st, f.wit, newDetReader("other"), refConfig{suite: &other})
	if err := verify(f.st, q, r, other); err != nil {
		t.Fatalf("proof under other generators does not verify under them: %v", err)
	}
	mustFail(t, f.st, q, "proof made under other generators")
}

func otherSuite() suite {
	const tag = "riffle/v2/generator-test-only"
	return suite{genTag: tag, gens: func(k int) []*group.Element {
		out := make([]*group.Element, k)
		for i := range out {
			out[i] = group.DeriveGenerator(tag, uint32(i))
		}
		return out
	}}
}

// BIND-6: unit tests of the transcript functions.
func TestTranscriptDependencies(t *testing.T) {
	const n, w = 3, 2
	f := newFixture(t, "bind6", n, w)
	p, err := Prove(f.st, f.wit, newDetReader("bind6"))
	if err != nil {
		t.Fatal(err)
	}
	l := newLayout(n, w)
	r := newDetReader("bind6 edits")
	uOf := func(st *Statement, enc []byte) ([digestSize]byte, []*group.Scalar) {
		return challengeVector(statementDigest(st, defaultSuite, n, w), n, enc[l.c:l.cHat])
	}
	cOf := func(st *Statement, enc []byte) *group.Scalar {
		eta, _ := uOf(st, enc)
		return challenge(eta, n, w, enc)
	}
	eta0, u0 := uOf(f.st, p.enc)
	c0 := cOf(f.st, p.enc)
	allChanged := func(what string, eta [digestSize]byte, u []*group.Scalar) {
		t.Helper()
		if eta == eta0 {
			t.Fatalf("%s: η unchanged", what)
		}
		for i := range u {
			if u[i].Equal(u0[i]) == 1 {
				t.Fatalf("%s: u_%d unchanged", what, i+1)
			}
		}
	}
	// Every single statement element.
	var edits []func(st *Statement)
	edits = append(edits, func(st *Statement) { st.Context = []byte("other") })
	for j := range w {
		edits = append(edits, func(st *Statement) { st.Keys[j] = randPoint(t, r) })
	}
	for i := range n {
		for j := range w {
			for _, list := range []func(st *Statement) [][]group.Ciphertext{
				func(st *Statement) [][]group.Ciphertext { return st.Inputs },
				func(st *Statement) [][]group.Ciphertext { return st.Outputs },
			} {
				edits = append(edits,
					func(st *Statement) { list(st)[i][j].A = randPoint(t, r) },
					func(st *Statement) { list(st)[i][j].B = randPoint(t, r) })
			}
		}
	}
	for k, e := range edits {
		st := cloneStatement(f.st)
		e(st)
		eta, u := uOf(st, p.enc)
		allChanged(fmt.Sprintf("statement edit %d", k), eta, u)
	}
	// Every C_k changes η and every u; every Ĉ_i and T value changes c but
	// not u; the scalars change neither.
	points, scalars := proofOffsets(n, w)
	for class, offs := range points {
		for k, o := range offs {
			b := bytes.Clone(p.enc)
			copy(b[o:], randPoint(t, r).Bytes())
			eta, u := uOf(f.st, b)
			if class == "C" {
				allChanged(fmt.Sprintf("C_%d", k+1), eta, u)
				continue
			}
			if eta != eta0 {
				t.Fatalf("%s[%d] changed η", class, k)
			}
			if cOf(f.st, b).Equal(c0) == 1 {
				t.Fatalf("%s[%d] did not change c", class, k)
			}
		}
	}
	for class, offs := range scalars {
		for k, o := range offs {
			b := bytes.Clone(p.enc)
			b[o] ^= 1
			if eta, _ := uOf(f.st, b); eta != eta0 || cOf(f.st, b).Equal(c0) != 1 {
				t.Fatalf("%s[%d] changed η or c", class, k)
			}
		}
	}
}
