package mix

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// stepFixture is one server's honest setup step with everything needed to
// verify it.
type stepFixture struct {
	epoch  EpochID
	s      int
	X      []*group.Element
	inputs [][]group.Ciphertext
	res    *StepResult
	sec    *StepSecret
}

// newStepFixture registers n clients for m servers and runs the chain up to
// and including server s.
func newStepFixture(t testing.TB, m, n, s int, seed string) *stepFixture {
	t.Helper()
	rand := newDetRand(seed)
	epoch := testEpoch(seed)
	sks, X := testServers(t, m, rand)
	_, _, regs := testClients(t, epoch, X, n, rand)
	inputs := InitialVectors(regs)
	for j := 0; ; j++ {
		res, sec, err := SetupStep(epoch, j, X, sks[j], inputs, rand)
		if err != nil {
			t.Fatal(err)
		}
		if j == s {
			return &stepFixture{epoch: epoch, s: s, X: X, inputs: inputs, res: res, sec: sec}
		}
		sec.Close()
		inputs = res.Next()
	}
}

func (f *stepFixture) verify() error {
	return VerifyStep(f.epoch, f.s, f.X, f.inputs, f.res, newDetRand("verifier weights"))
}

// clone deep-copies the result through its encoding.
func (f *stepFixture) clone(t testing.TB) *StepResult {
	t.Helper()
	enc, err := f.res.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseStepResult(enc, len(f.inputs), len(f.X), f.s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func cloneVectors(in [][]group.Ciphertext) [][]group.Ciphertext {
	out := make([][]group.Ciphertext, len(in))
	for i, v := range in {
		out[i] = append([]group.Ciphertext(nil), v...)
	}
	return out
}

func TestSetupStepHonest(t *testing.T) {
	for _, tc := range []struct{ m, n, s int }{{1, 1, 0}, {1, 2, 0}, {2, 1, 1}, {2, 2, 0}, {3, 3, 1}, {3, 5, 2}, {5, 3, 0}} {
		t.Run(fmt.Sprintf("m=%d/n=%d/s=%d", tc.m, tc.n, tc.s), func(t *testing.T) {
			f := newStepFixture(t, tc.m, tc.n, tc.s, fmt.Sprintf("honest %v", tc))
			if err := f.verify(); err != nil {
				t.Fatal(err)
			}
			if got := f.clone(t); got == nil {
				t.Fatal("no clone")
			}
			// Forward is π_s: output π_s(p) re-encrypts input p.
			fw := f.sec.Forward()
			for p := range tc.n {
				q := fw[p]
				inPos, _, err := f.sec.ProveRoute(f.epoch, f.X, f.inputs, f.res, q, newDetRand("route"))
				if err != nil {
					t.Fatal(err)
				}
				if inPos != p {
					t.Fatalf("Forward[%d] = %d but the witness routes output %d from input %d", p, q, q, inPos)
				}
			}
		})
	}
}

// TestSetupStepTamper changes one thing at a time in an honest step and
// checks that verification fails.
func TestSetupStepTamper(t *testing.T) {
	f := newStepFixture(t, 3, 4, 1, "tamper")
	if err := f.verify(); err != nil {
		t.Fatal(err)
	}
	other := newStepFixture(t, 3, 4, 1, "tamper other")
	g := group.Base()
	cases := []struct {
		name string
		edit func(f *stepFixture)
	}{
		{"output ciphertext A changed", func(f *stepFixture) { f.res.Shuffled[2][1].A.Add(f.res.Shuffled[2][1].A, g) }},
		{"output ciphertext B changed", func(f *stepFixture) { f.res.Shuffled[0][0].B.Add(f.res.Shuffled[0][0].B, g) }},
		{"two outputs swapped", func(f *stepFixture) {
			f.res.Shuffled[0], f.res.Shuffled[1] = f.res.Shuffled[1], f.res.Shuffled[0]
			f.res.Stripped[0], f.res.Stripped[1] = f.res.Stripped[1], f.res.Stripped[0]
		}},
		{"stripped element changed", func(f *stepFixture) { f.res.Stripped[3][1].Add(f.res.Stripped[3][1], g) }},
		{"two stripped rows swapped", func(f *stepFixture) { f.res.Stripped[0], f.res.Stripped[1] = f.res.Stripped[1], f.res.Stripped[0] }},
		{"opened share changed", func(f *stepFixture) { f.res.U[1].Add(f.res.U[1], g) }},
		{"two shares swapped", func(f *stepFixture) { f.res.U[0], f.res.U[2] = f.res.U[2], f.res.U[0] }},
		{"dleq byte flipped", func(f *stepFixture) { f.res.DLEQ[5] ^= 1 }},
		{"shuffle proof byte flipped", func(f *stepFixture) {
			enc, _ := f.res.MarshalBinary()
			n, m := len(f.inputs), len(f.X)
			off := StepResultSize(n, m, f.s) - DLEQProofSize - 40 // inside the proof's scalars
			enc[off] ^= 1
			r, err := ParseStepResult(enc, n, m, f.s)
			if err != nil {
				// A flipped bit may make a scalar non-canonical: flip another.
				enc[off] ^= 1
				enc[off-32*3] ^= 2
				if r, err = ParseStepResult(enc, n, m, f.s); err != nil {
					panic(err)
				}
			}
			f.res = r
		}},
		{"epoch id changed", func(f *stepFixture) { f.epoch[0] ^= 1 }},
		{"a server key changed", func(f *stepFixture) {
			f.X = append([]*group.Element(nil), f.X...)
			f.X[2] = group.NewElement().Add(f.X[2], g)
		}},
		{"own server key changed", func(f *stepFixture) {
			f.X = append([]*group.Element(nil), f.X...)
			f.X[1] = group.NewElement().Add(f.X[1], g)
		}},
		{"an input changed (opened component)", func(f *stepFixture) {
			f.inputs = cloneVectors(f.inputs)
			f.inputs[1][0].B = group.NewElement().Add(f.inputs[1][0].B, g)
		}},
		{"an input changed (shuffled component)", func(f *stepFixture) {
			f.inputs = cloneVectors(f.inputs)
			f.inputs[3][2].A = group.NewElement().Add(f.inputs[3][2].A, g)
		}},
		{"other server position", func(f *stepFixture) { f.s = 0 }},
		{"proofs from another epoch", func(f *stepFixture) {
			// Same shape, another epoch: its proofs must not carry over.
			f.res.ShuffleProof = other.res.ShuffleProof
			f.res.DLEQ = other.res.DLEQ
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := *f
			g.res = f.clone(t)
			tc.edit(&g)
			err := g.verify()
			if err == nil {
				t.Fatal("tampered step verifies")
			}
			var se *ShareError
			if errors.As(err, &se) {
				t.Fatalf("tamper reported as a client fault: %v", err)
			}
		})
	}
	// The whole result of the same step in another epoch does not verify here.
	t.Run("whole result from another epoch", func(t *testing.T) {
		g := *other
		g.epoch = f.epoch
		if g.verify() == nil {
			t.Fatal("result verifies under another epoch id")
		}
	})
}

// identityInput is a client ciphertext of the identity under key: it opens
// to U = O.
func identityInput(key *group.Element, rand *detRand) group.Ciphertext {
	r, _ := group.RandomScalar(rand)
	return group.Ciphertext{A: group.NewElement().ScalarBaseMult(r), B: group.NewElement().ScalarMult(r, key)}
}

func TestSetupShareErrors(t *testing.T) {
	rand := newDetRand("share errors").(*detRand)
	epoch := testEpoch("share errors")
	sks, X := testServers(t, 2, rand)
	_, _, regs := testClients(t, epoch, X, 4, rand)
	keys, _ := AggregateKeys(X, 0)

	t.Run("identity U", func(t *testing.T) {
		in := InitialVectors(regs)
		in[2][0] = identityInput(keys[0], rand)
		res, sec, err := SetupStep(epoch, 0, X, sks[0], in, rand)
		var se *ShareError
		if !errors.As(err, &se) || se.Position != 2 || se.Duplicate != -1 || se.Pseudonym {
			t.Fatalf("got %v, want identity U at input 2", err)
		}
		defer sec.Close()
		err = VerifyStep(epoch, 0, X, in, res, rand)
		if !errors.As(err, &se) || se.Position != 2 {
			t.Fatalf("verifier: got %v, want identity U at input 2", err)
		}
	})
	t.Run("duplicate U", func(t *testing.T) {
		in := InitialVectors(regs)
		in[3] = append([]group.Ciphertext(nil), in[1]...)
		_, sec, err := SetupStep(epoch, 0, X, sks[0], in, rand)
		defer sec.Close()
		var se *ShareError
		if !errors.As(err, &se) || se.Position != 3 || se.Duplicate != 1 {
			t.Fatalf("got %v, want U at input 3 repeating input 1", err)
		}
	})
	t.Run("identity pseudonym", func(t *testing.T) {
		in := InitialVectors(regs)
		in[0][2] = identityInput(keys[2], rand)
		res0, sec0, err := SetupStep(epoch, 0, X, sks[0], in, rand)
		if err != nil {
			t.Fatal(err)
		}
		res1, sec1, err := SetupStep(epoch, 1, X, sks[1], res0.Next(), rand)
		var se *ShareError
		if !errors.As(err, &se) || !se.Pseudonym || se.Duplicate != -1 {
			t.Fatalf("got %v, want identity pseudonym", err)
		}
		// The output position named is where input 0 went through both shuffles.
		want := sec1.Forward()[sec0.Forward()[0]]
		if se.Position != want {
			t.Fatalf("identity pseudonym at output %d, want %d", se.Position, want)
		}
		if err := VerifyStep(epoch, 1, X, res0.Next(), res1, rand); !errors.As(err, &se) || se.Position != want {
			t.Fatalf("verifier: got %v", err)
		}
	})
	t.Run("wrong secret key", func(t *testing.T) {
		if _, _, err := SetupStep(epoch, 1, X, sks[0], InitialVectors(regs), rand); err == nil {
			t.Fatal("step with another server's key")
		}
	})
	t.Run("wrong width", func(t *testing.T) {
		if _, _, err := SetupStep(epoch, 1, X, sks[1], InitialVectors(regs), rand); err == nil {
			t.Fatal("server 1 accepted width m+1 inputs")
		}
	})
}

func TestStepResultEncoding(t *testing.T) {
	f := newStepFixture(t, 3, 3, 0, "encoding")
	enc, err := f.res.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != StepResultSize(3, 3, 0) {
		t.Fatalf("encoded %d bytes, StepResultSize says %d", len(enc), StepResultSize(3, 3, 0))
	}
	r, err := ParseStepResult(enc, 3, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	enc2, _ := r.MarshalBinary()
	if !bytes.Equal(enc, enc2) {
		t.Fatal("decode → encode changed the bytes")
	}
	if _, err := ParseStepResult(enc[:len(enc)-1], 3, 3, 0); err == nil {
		t.Fatal("short result parses")
	}
	if _, err := ParseStepResult(enc, 3, 3, 1); err == nil {
		t.Fatal("result parses for another server")
	}
	bad := append([]byte(nil), enc...)
	copy(bad[32:64], bytes.Repeat([]byte{0xff}, 32)) // non-canonical U_1
	if _, err := ParseStepResult(bad, 3, 3, 0); err == nil {
		t.Fatal("non-canonical element parses")
	}
	bad = append([]byte(nil), enc...)
	copy(bad[len(bad)-32:], bytes.Repeat([]byte{0xff}, 32)) // non-canonical scalar
	if _, err := ParseStepResult(bad, 3, 3, 0); err == nil {
		t.Fatal("non-canonical dleq scalar parses")
	}
}

func TestRoute(t *testing.T) {
	for _, s := range []int{0, 2} { // a middle server's route and the last server's (pseudonym)
		f := newStepFixture(t, 3, 4, s, fmt.Sprintf("route %d", s))
		fw := f.sec.Forward()
		q := fw[1]
		inPos, proof, err := f.sec.ProveRoute(f.epoch, f.X, f.inputs, f.res, q, newDetRand("r"))
		if err != nil {
			t.Fatal(err)
		}
		if inPos != 1 {
			t.Fatalf("route names input %d, want 1", inPos)
		}
		if err := VerifyRoute(f.epoch, s, f.X, f.inputs, f.res, q, inPos, proof); err != nil {
			t.Fatal(err)
		}
		other := testEpoch("other")
		bad := append([]byte(nil), proof...)
		bad[40] ^= 1
		for name, err := range map[string]error{
			"wrong input position": VerifyRoute(f.epoch, s, f.X, f.inputs, f.res, q, (inPos+1)%4, proof),
			"wrong output":         VerifyRoute(f.epoch, s, f.X, f.inputs, f.res, (q+1)%4, inPos, proof),
			"other epoch":          VerifyRoute(other, s, f.X, f.inputs, f.res, q, inPos, proof),
			"flipped byte":         VerifyRoute(f.epoch, s, f.X, f.inputs, f.res, q, inPos, bad),
			"out of range":         VerifyRoute(f.epoch, s, f.X, f.inputs, f.res, q, 9, proof),
		} {
			if err == nil {
				t.Errorf("server %d: %s: route proof verifies", s, name)
			}
		}
		// A server that misroutes cannot prove a route it did not take.
		wrongIn := (inPos + 1) % 4
		fake, err := ProveReencryption(f.epoch, s, wrongIn, q, s+1, mustKeys(f.X, s)[1], f.inputs[wrongIn][1], f.res.Shuffled[q][0], f.sec.wit.R[q][0], newDetRand("fake"))
		if err != nil {
			t.Fatal(err)
		}
		if VerifyRoute(f.epoch, s, f.X, f.inputs, f.res, q, wrongIn, fake) == nil {
			t.Errorf("server %d: a false route proves", s)
		}
		f.sec.Close()
		if _, _, err := f.sec.ProveRoute(f.epoch, f.X, f.inputs, f.res, q, newDetRand("r")); err == nil {
			t.Error("closed step secret still proves routes")
		}
	}
}

func mustKeys(X []*group.Element, s int) []*group.Element {
	k, err := AggregateKeys(X, s)
	if err != nil {
		panic(err)
	}
	return k
}
