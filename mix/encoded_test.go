package mix

import (
	"bytes"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// TestEncodingsKept: the encodings setup keeps (registrations as parsed,
// step results as made or parsed, the vectors handed on by Next) are those
// of the elements in hand, and are dropped as soon as an element is
// replaced, so that what is hashed is always what is checked.
func TestEncodingsKept(t *testing.T) {
	rand := newDetRand("encodings kept")
	epoch := testEpoch("encodings kept")
	const m, n = 3, 4
	sks, X := testServers(t, m, rand)
	_, _, made := testClients(t, epoch, X, n, rand)
	regs := make([]*Registration, n)
	for i, reg := range made {
		b, err := reg.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if regs[i], err = ParseRegistration(b, m); err != nil {
			t.Fatal(err)
		}
		if regs[i].CiphertextHash() != reg.CiphertextHash() {
			t.Fatalf("registration %d: hash of the kept encoding differs from a fresh one", i)
		}
	}
	fresh := func(vs [][]group.Ciphertext) []byte { return encodeAll(flatVectors(vs)) }

	inputs := InitialVectors(regs)
	kept := encodeVectors(inputs)
	if !bytes.Equal(kept, fresh(inputs)) {
		t.Fatal("initial vectors: kept encoding differs")
	}
	// The very bytes parsed are reused, not encoded again.
	if &kept[0] != &encodeVectors(inputs)[0] {
		t.Fatal("initial vectors: encoded again")
	}
	swapped := cloneVectors(inputs)
	swapped[1][2].B = group.NewElement().Set(inputs[0][0].B)
	if !bytes.Equal(encodeVectors(swapped), fresh(swapped)) || bytes.Equal(encodeVectors(swapped), kept) {
		t.Fatal("a replaced element did not drop the kept encoding")
	}

	for s := range m {
		res, sec, err := SetupStep(epoch, s, X, sks[s], inputs, rand)
		if err != nil {
			t.Fatal(err)
		}
		sec.Close()
		if !bytes.Equal(res.encodeElements(), encodeAll(res.flatElements())) {
			t.Fatalf("step %d: kept element encoding differs", s)
		}
		b, err := res.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		pub, err := ParseStepResult(b, n, m, s)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyStep(epoch, s, X, inputs, pub, rand); err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
		// A replaced element is encoded afresh.
		pub.U[0] = group.NewElement().Set(pub.U[1])
		if bytes.Equal(pub.encodeElements()[:32], b[:32]) || !bytes.Equal(pub.encodeElements(), encodeAll(pub.flatElements())) {
			t.Fatalf("step %d: a replaced share kept its old encoding", s)
		}
		pub.U[0] = res.U[0]
		inputs = res.Next()
		if inputs != nil && !bytes.Equal(encodeVectors(inputs), fresh(inputs)) {
			t.Fatalf("step %d: vectors handed on with a wrong encoding", s)
		}
	}
}
