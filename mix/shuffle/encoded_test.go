package shuffle

import (
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// TestStatementEncodings: σ over encodings the caller supplies is σ over
// the elements encoded afresh, a proof made either way verifies the other
// way, and encodings of the wrong shape are ignored.
func TestStatementEncodings(t *testing.T) {
	f := newFixture(t, "statement encodings", 5, 3)
	rows := func(vs [][]group.Ciphertext) [][]byte {
		out := make([][]byte, len(vs))
		for i, v := range vs {
			for _, ct := range v {
				out[i] = ct.Append(out[i])
			}
		}
		return out
	}
	plain := *f.st
	withEnc := plain
	withEnc.InputsEnc, withEnc.OutputsEnc = rows(plain.Inputs), rows(plain.Outputs)
	if statementDigest(&plain, defaultSuite, 5, 3) != statementDigest(&withEnc, defaultSuite, 5, 3) {
		t.Fatal("σ differs with supplied encodings")
	}
	bad := withEnc
	bad.InputsEnc = bad.InputsEnc[:4]
	bad.OutputsEnc = append([][]byte{bad.OutputsEnc[0][:64]}, bad.OutputsEnc[1:]...)
	if statementDigest(&plain, defaultSuite, 5, 3) != statementDigest(&bad, defaultSuite, 5, 3) {
		t.Fatal("encodings of the wrong shape were used")
	}
	p, err := Prove(&withEnc, f.wit, newDetReader("prove"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(&plain, p, newDetReader("verify")); err != nil {
		t.Fatalf("proof made over supplied encodings: %v", err)
	}
	p, err = Prove(&plain, f.wit, newDetReader("prove"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(&withEnc, p, newDetReader("verify")); err != nil {
		t.Fatalf("verified over supplied encodings: %v", err)
	}
}
