package shuffle

import (
	"crypto/sha512"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// detReader is a deterministic byte stream for tests only: SHA-512 of
// (seed || u64 counter), block after block.
type detReader struct {
	seed []byte
	ctr  uint64
	buf  []byte
}

func newDetReader(seed string) *detReader { return &detReader{seed: []byte(seed)} }

func (r *detReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.buf) == 0 {
			h := sha512.New()
			h.Write(r.seed)
			var c [8]byte
			binary.BigEndian.PutUint64(c[:], r.ctr)
			r.ctr++
			h.Write(c[:])
			r.buf = h.Sum(nil)
		}
		k := copy(p[n:], r.buf)
		r.buf = r.buf[k:]
		n += k
	}
	return n, nil
}

func mustScalar(t testing.TB, r *detReader) *group.Scalar {
	t.Helper()
	s, err := group.RandomScalar(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randPoint(t testing.TB, r *detReader) *group.Element {
	return group.NewElement().ScalarBaseMult(mustScalar(t, r))
}

// fixture is an honest statement with its witness and message points.
type fixture struct {
	st   *Statement
	wit  *Witness
	msgs [][]*group.Element // msgs[k][j]: plaintext of input k, component j
	sk   []*group.Scalar
}

// encrypt returns ElGamal(m) under y with randomness from r.
func encrypt(t testing.TB, r *detReader, y, m *group.Element) group.Ciphertext {
	rho := mustScalar(t, r)
	b := group.NewElement().ScalarMult(rho, y)
	return group.Ciphertext{A: group.NewElement().ScalarBaseMult(rho), B: b.Add(b, m)}
}

// newInputs makes w keys and n input vectors of random messages.
func newInputs(t testing.TB, r *detReader, n, w int) (keys []*group.Element, sk []*group.Scalar, in [][]group.Ciphertext, msgs [][]*group.Element) {
	for range w {
		x := mustScalar(t, r)
		sk = append(sk, x)
		keys = append(keys, group.NewElement().ScalarBaseMult(x))
	}
	for range n {
		var row []group.Ciphertext
		var mrow []*group.Element
		for j := range w {
			m := randPoint(t, r)
			mrow = append(mrow, m)
			row = append(row, encrypt(t, r, keys[j], m))
		}
		in = append(in, row)
		msgs = append(msgs, mrow)
	}
	return
}

// newFixture shuffles n×w random inputs with Shuffle.
func newFixture(t testing.TB, seed string, n, w int) *fixture {
	t.Helper()
	r := newDetReader(seed)
	keys, sk, in, msgs := newInputs(t, r, n, w)
	out, wit, err := Shuffle(keys, in, r)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: &Statement{Context: []byte("test epoch/" + seed), Keys: keys, Inputs: in, Outputs: out}, wit: wit, msgs: msgs, sk: sk}
}

// withPermutation re-shuffles the fixture's inputs with a chosen Pi
// (output i ← input pi[i]) and fresh scalars.
func (f *fixture) withPermutation(t testing.TB, seed string, pi []int) *fixture {
	t.Helper()
	r := newDetReader(seed)
	n, w := len(f.st.Inputs), len(f.st.Keys)
	wit := &Witness{Pi: slices.Clone(pi), R: make([][]*group.Scalar, n)}
	out := make([][]group.Ciphertext, n)
	for i := range n {
		for range w {
			wit.R[i] = append(wit.R[i], mustScalar(t, r))
		}
		out[i] = rerandomise(f.st.Keys, f.st.Inputs[pi[i]], wit.R[i])
	}
	st := *f.st
	st.Outputs = out
	return &fixture{st: &st, wit: wit, msgs: f.msgs, sk: f.sk}
}

func rerandomise(keys []*group.Element, in []group.Ciphertext, r []*group.Scalar) []group.Ciphertext {
	row := make([]group.Ciphertext, len(in))
	for j := range in {
		a := group.NewElement().ScalarBaseMult(r[j])
		b := group.NewElement().ScalarMult(r[j], keys[j])
		row[j] = group.Ciphertext{A: a.Add(a, in[j].A), B: b.Add(b, in[j].B)}
	}
	return row
}

// decrypt returns B − x·A.
func decrypt(x *group.Scalar, c group.Ciphertext) *group.Element {
	xa := group.NewElement().ScalarMult(x, c.A)
	return group.NewElement().Subtract(c.B, xa)
}

func cloneStatement(st *Statement) *Statement {
	c := &Statement{Context: slices.Clone(st.Context), Keys: slices.Clone(st.Keys)}
	for _, row := range st.Inputs {
		c.Inputs = append(c.Inputs, slices.Clone(row))
	}
	for _, row := range st.Outputs {
		c.Outputs = append(c.Outputs, slices.Clone(row))
	}
	return c
}
