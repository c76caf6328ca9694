package shuffle

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// invalidPoints are RFC 9496 Appendix A.2 invalid encodings, one or two of
// each kind (the full list is in internal/group's tests).
var invalidPoints = map[string]string{
	"non-canonical field element": "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"negative s":                  "0100000000000000000000000000000000000000000000000000000000000000",
	"non-square x^2":              "26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371",
	"negative xy":                 "3eb858e78f5a7254d8c9731174a94f76755fd3941c0ac93735c07ba14579630e",
	"s = -1":                      "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
}

// ell is the group order ℓ, little-endian.
var ell, _ = hex.DecodeString("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")

// addEll returns the 32-byte little-endian encoding of s + ℓ (< 2^256).
func addEll(s []byte) []byte {
	out := make([]byte, 32)
	carry := 0
	for i := range 32 {
		v := int(s[i]) + int(ell[i]) + carry
		out[i], carry = byte(v), v>>8
	}
	return out
}

func mustReject(t *testing.T, err error, target error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted", what)
	}
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v does not wrap %v", what, err, target)
	}
}

// rejectStatement requires Shuffle, Prove, Verify and verifyEach to reject st.
func rejectStatement(t *testing.T, st *Statement, wit *Witness, p *Proof, what string) {
	t.Helper()
	_, err := Prove(st, wit, newDetReader("x"))
	mustReject(t, err, ErrStatement, what+" (Prove)")
	mustReject(t, Verify(st, p, newDetReader("x")), ErrStatement, what+" (Verify)")
	_, err = verifyEach(st, p, defaultSuite)
	mustReject(t, err, ErrStatement, what+" (verifyEach)")
}

func TestValidationStatement(t *testing.T) {
	f := newFixture(t, "val", 3, 2)
	p, err := Prove(f.st, f.wit, newDetReader("val"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(e func(st *Statement)) *Statement {
		st := cloneStatement(f.st)
		e(st)
		return st
	}
	// VAL-1
	rejectStatement(t, edit(func(st *Statement) { st.Inputs, st.Outputs = nil, nil }), f.wit, p, "n = 0")
	rejectStatement(t, edit(func(st *Statement) {
		st.Keys = nil
		for i := range st.Inputs {
			st.Inputs[i], st.Outputs[i] = nil, nil
		}
	}), f.wit, p, "w = 0")
	row := make([]group.Ciphertext, 8)
	big := make([][]group.Ciphertext, MaxNW/8+1) // rows share one backing array: nothing big is allocated
	for i := range big {
		big[i] = row
	}
	rejectStatement(t, &Statement{Keys: make([]*group.Element, 8), Inputs: big, Outputs: big}, f.wit, p, "n·w over the cap")
	rejectStatement(t, edit(func(st *Statement) { st.Context = make([]byte, MaxContext+1) }), f.wit, p, "long context")
	// VAL-2
	rejectStatement(t, edit(func(st *Statement) { st.Outputs = st.Outputs[:2] }), f.wit, p, "n−1 outputs")
	rejectStatement(t, edit(func(st *Statement) { st.Outputs = append(st.Outputs, st.Outputs[0]) }), f.wit, p, "n+1 outputs")
	rejectStatement(t, edit(func(st *Statement) { st.Outputs[1] = st.Outputs[1][:1] }), f.wit, p, "w−1 components")
	rejectStatement(t, edit(func(st *Statement) { st.Inputs[1] = append(st.Inputs[1], st.Inputs[1][0]) }), f.wit, p, "w+1 components")
	rejectStatement(t, edit(func(st *Statement) { st.Keys = st.Keys[:1] }), f.wit, p, "w−1 keys")
	rejectStatement(t, edit(func(st *Statement) { st.Keys = append(st.Keys, st.Keys[0]) }), f.wit, p, "w+1 keys")
	rejectStatement(t, edit(func(st *Statement) { st.Outputs[2][1].B = nil }), f.wit, p, "nil component")
	// VAL-6: Y_j = O.
	rejectStatement(t, edit(func(st *Statement) { st.Keys[1] = group.NewElement() }), f.wit, p, "identity key")
	rejectStatement(t, edit(func(st *Statement) { st.Keys[0] = nil }), f.wit, p, "nil key")
}

func TestValidationShuffle(t *testing.T) {
	f := newFixture(t, "vals", 3, 2)
	row := make([]group.Ciphertext, 8)
	big := make([][]group.Ciphertext, MaxNW/8+1)
	for i := range big {
		big[i] = row
	}
	narrow := cloneStatement(f.st).Inputs
	narrow[2] = narrow[2][:1]
	for name, c := range map[string]struct {
		keys []*group.Element
		in   [][]group.Ciphertext
	}{
		"n = 0":          {f.st.Keys, nil},
		"w = 0":          {nil, [][]group.Ciphertext{{}, {}}},
		"n·w over cap":   {make([]*group.Element, 8), big},
		"identity key":   {[]*group.Element{f.st.Keys[0], group.NewElement()}, f.st.Inputs},
		"nil key":        {[]*group.Element{nil, f.st.Keys[1]}, f.st.Inputs},
		"w−1 components": {f.st.Keys, narrow},
		"w+1 keys":       {append(f.st.Keys[:2:2], f.st.Keys[0]), f.st.Inputs},
	} {
		_, _, err := Shuffle(c.keys, c.in, newDetReader("x"))
		mustReject(t, err, ErrStatement, name)
	}
}

func TestValidationWitness(t *testing.T) {
	f := newFixture(t, "valw", 3, 2)
	for name, wit := range map[string]*Witness{
		"nil":             nil,
		"short Pi":        {Pi: f.wit.Pi[:2], R: f.wit.R},
		"repeated Pi":     {Pi: []int{0, 0, 1}, R: f.wit.R},
		"Pi out of range": {Pi: []int{0, 1, 3}, R: f.wit.R},
		"short R":         {Pi: f.wit.Pi, R: f.wit.R[:2]},
		"narrow R":        {Pi: f.wit.Pi, R: [][]*group.Scalar{f.wit.R[0], f.wit.R[1][:1], f.wit.R[2]}},
		"nil scalar":      {Pi: f.wit.Pi, R: [][]*group.Scalar{f.wit.R[0], {nil, f.wit.R[1][1]}, f.wit.R[2]}},
	} {
		_, err := Prove(f.st, wit, newDetReader("x"))
		mustReject(t, err, ErrWitness, name)
	}
}

// proofOffsets lists, per field class, the byte offset of each element.
func proofOffsets(n, w int) (points, scalars map[string][]int) {
	l := newLayout(n, w)
	at := func(start, count int) []int {
		var o []int
		for i := range count {
			o = append(o, start+32*i)
		}
		return o
	}
	points = map[string][]int{
		"C": at(l.c, n), "Ĉ": at(l.cHat, n), "T_1..T_3": at(l.t123, 3),
		"T_4A": at(l.t4a, w), "T_4B": at(l.t4b, w), "T̂": at(l.tHat, n),
	}
	scalars = map[string][]int{"s_1..s_3": at(l.s123, 3), "s_4": at(l.s4, w), "ŝ": at(l.sHat, n), "s'": at(l.sPr, n)}
	return points, scalars
}

func TestValidationProofEncoding(t *testing.T) {
	const n, w = 3, 2
	f := newFixture(t, "valp", n, w)
	p, err := Prove(f.st, f.wit, newDetReader("valp"))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := p.MarshalBinary()
	reject := func(b []byte, n, w int, what string) {
		t.Helper()
		_, err := Parse(b, n, w)
		mustReject(t, err, ErrProofEncoding, what)
	}
	// VAL-3: length, header, array lengths.
	reject(good[:len(good)-1], n, w, "one byte short")
	reject(append(bytes.Clone(good), 0), n, w, "one byte long")
	reject(good, n+1, w, "statement n ≠ proof n")
	reject(good, n, w+1, "statement w ≠ proof w")
	reject(good, 0, w, "n = 0")
	reject(good, n, 0, "w = 0")
	reject(good, MaxN, MaxW, "n·w over the cap")
	for _, hdr := range [][2]uint32{{n + 1, w}, {n, w + 1}, {n, w - 1}, {0, w}, {1<<32 - 1, w}} {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[0:], hdr[0])
		binary.BigEndian.PutUint32(b[4:], hdr[1])
		reject(b, n, w, fmt.Sprintf("header %v", hdr))
	}
	points, scalars := proofOffsets(n, w)
	for class, offs := range merge(points, scalars) {
		o := offs[len(offs)-1]
		short := append(bytes.Clone(good[:o]), good[o+32:]...)
		reject(short, n, w, class+" one element short")
		long := append(append(bytes.Clone(good[:o+32]), good[o:o+32]...), good[o+32:]...)
		reject(long, n, w, class+" one element long")
	}
	// VAL-4: an RFC 9496 invalid encoding at each point position.
	for class, offs := range points {
		for _, o := range offs {
			for kind, h := range invalidPoints {
				b := bytes.Clone(good)
				hex.Decode(b[o:o+32], []byte(h))
				reject(b, n, w, fmt.Sprintf("%s at %d: %s", class, o, kind))
			}
		}
	}
	// VAL-5: s + ℓ and all-0xFF at each scalar position.
	for class, offs := range scalars {
		for _, o := range offs {
			b := bytes.Clone(good)
			copy(b[o:], addEll(good[o:o+32]))
			reject(b, n, w, class+" + ℓ")
			b = bytes.Clone(good)
			copy(b[o:], bytes.Repeat([]byte{0xff}, 32))
			reject(b, n, w, class+" all 0xFF")
		}
	}
	// VAL-6: C_k = O, Ĉ_i = O (the encoding of O is 32 zero bytes).
	for _, class := range []string{"C", "Ĉ"} {
		for _, o := range points[class] {
			b := bytes.Clone(good)
			clear(b[o : o+32])
			reject(b, n, w, class+" = O")
		}
	}
	// The T values may be the identity: parsing accepts, verification rejects.
	b := bytes.Clone(good)
	clear(b[points["T_1..T_3"][0]:][:32])
	q, err := Parse(b, n, w)
	if err != nil {
		t.Fatalf("T_1 = O must parse: %v", err)
	}
	mustReject(t, Verify(f.st, q, nil), ErrProofInvalid, "T_1 = O")
	if _, err := Parse(good, n, w); err != nil {
		t.Fatalf("the unmodified proof must parse: %v", err)
	}
}

func merge(a, b map[string][]int) map[string][]int {
	out := map[string][]int{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// VAL-4 for the statement's points: the statement holds decoded elements,
// so its points are as canonical as the decoder the caller used; riffle
// decodes keys with group.DecodeNonIdentity and ciphertexts with
// group.DecodeCiphertext. Both must reject every kind, at every position of
// a ciphertext.
func TestValidationStatementDecoders(t *testing.T) {
	good := group.Base().Bytes()
	for kind, h := range invalidPoints {
		bad, _ := hex.DecodeString(h)
		if _, err := group.DecodeNonIdentity(bad); !errors.Is(err, group.ErrNonCanonical) {
			t.Fatalf("key decoder accepted %s: %v", kind, err)
		}
		for _, ct := range [][]byte{append(bytes.Clone(bad), good...), append(bytes.Clone(good), bad...)} {
			for _, nonID := range []bool{false, true} {
				if _, err := group.DecodeCiphertext(ct, nonID); !errors.Is(err, group.ErrNonCanonical) {
					t.Fatalf("ciphertext decoder accepted %s: %v", kind, err)
				}
			}
		}
	}
	if _, err := group.DecodeNonIdentity(make([]byte, 32)); !errors.Is(err, group.ErrIdentity) {
		t.Fatalf("key decoder accepted the identity: %v", err)
	}
}

func TestProofSize(t *testing.T) {
	for _, c := range []struct{ n, w, size int }{{1, 1, 8 + 32*14}, {3, 2, 8 + 32*27}, {1000, 2, 8 + 32*5012}, {0, 1, -1}, {1, 0, -1}, {MaxN, MaxW, -1}} {
		if got := ProofSize(c.n, c.w); got != c.size {
			t.Errorf("ProofSize(%d, %d) = %d, want %d", c.n, c.w, got, c.size)
		}
	}
}

// A proof is checked against the statement's shape, never its own.
func TestVerifyProofShapeMismatch(t *testing.T) {
	small := newFixture(t, "shape small", 3, 2)
	big := newFixture(t, "shape big", 4, 2)
	p, err := Prove(small.st, small.wit, newDetReader("shape"))
	if err != nil {
		t.Fatal(err)
	}
	mustReject(t, Verify(big.st, p, nil), ErrProofEncoding, "proof for n = 3 against n = 4")
	_, err = verifyEach(big.st, p, defaultSuite)
	mustReject(t, err, ErrProofEncoding, "unbatched: proof for n = 3 against n = 4")
	mustReject(t, Verify(small.st, nil, nil), ErrProofEncoding, "nil proof")
	mustReject(t, Verify(small.st, &Proof{}, nil), ErrProofEncoding, "empty proof")
	if _, err := (&Proof{}).MarshalBinary(); err == nil {
		t.Fatal("empty proof marshalled")
	}
}
