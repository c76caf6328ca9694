package shuffle

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// The known-answer test of docs/proto-shuffle.md. The statement and the
// prover's randomness come from detReader (SHA-512(seed || u64 counter)),
// so that another implementation can reproduce the proof bytes. Regenerate
// with RIFFLE_UPDATE_KAT=1 only when the encoding is meant to change.

const (
	katFile       = "kat.json"
	katStmtSeed   = "riffle/v2 shuffle KAT statement"
	katProverSeed = "riffle/v2 shuffle KAT prover"
	katContext    = "riffle/v2 shuffle KAT epoch || u32 s || step"
)

type kat struct {
	Comment    string     `json:"comment"`
	Context    string     `json:"context"`
	ProverSeed string     `json:"prover_seed"`
	Pi         []int      `json:"pi"`
	Keys       []string   `json:"keys"`
	Inputs     [][]string `json:"inputs"`
	Outputs    [][]string `json:"outputs"`
	Sigma      string     `json:"sigma"`
	Eta        string     `json:"eta"`
	U1         string     `json:"u_1"`
	C          string     `json:"c"`
	Proof      string     `json:"proof"`
}

func hexRows(rows [][]group.Ciphertext) [][]string {
	var out [][]string
	for _, row := range rows {
		var r []string
		for _, ct := range row {
			r = append(r, hex.EncodeToString(ct.Bytes()))
		}
		out = append(out, r)
	}
	return out
}

func makeKAT(t *testing.T) (kat, *Statement) {
	const n, w = 3, 2
	r := newDetReader(katStmtSeed)
	keys, _, in, _ := newInputs(t, r, n, w)
	pi := []int{1, 2, 0} // a 3-cycle: the KAT also pins the direction of π
	f := (&fixture{st: &Statement{Context: []byte(katContext), Keys: keys, Inputs: in}}).withPermutation(t, katStmtSeed+" R", pi)
	p, err := Prove(f.st, f.wit, newDetReader(katProverSeed))
	if err != nil {
		t.Fatal(err)
	}
	sigma := statementDigest(f.st, defaultSuite, n, w)
	l := newLayout(n, w)
	eta, u := challengeVector(sigma, n, p.enc[l.c:l.cHat])
	k := kat{
		Comment:    "mix/shuffle known answer: n = 3, w = 2; see docs/proto-shuffle.md",
		Context:    katContext,
		ProverSeed: katProverSeed,
		Pi:         pi,
		Outputs:    hexRows(f.st.Outputs),
		Inputs:     hexRows(in),
		Sigma:      hex.EncodeToString(sigma[:]),
		Eta:        hex.EncodeToString(eta[:]),
		U1:         hex.EncodeToString(u[0].Bytes()),
		C:          hex.EncodeToString(challenge(eta, n, w, p.enc).Bytes()),
		Proof:      hex.EncodeToString(p.enc),
	}
	for _, y := range keys {
		k.Keys = append(k.Keys, hex.EncodeToString(y.Bytes()))
	}
	return k, f.st
}

func TestKnownAnswer(t *testing.T) {
	got, _ := makeKAT(t)
	path := filepath.Join("testdata", katFile)
	if os.Getenv("RIFFLE_UPDATE_KAT") == "1" {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want kat
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"σ", got.Sigma, want.Sigma}, {"η", got.Eta, want.Eta}, {"u_1", got.U1, want.U1},
		{"c", got.C, want.C}, {"proof", got.Proof, want.Proof},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, KAT has %s", c.name, c.got, c.want)
		}
	}
	if !slices.Equal(got.Keys, want.Keys) || !slices.EqualFunc(got.Inputs, want.Inputs, slices.Equal) ||
		!slices.EqualFunc(got.Outputs, want.Outputs, slices.Equal) || !slices.Equal(got.Pi, want.Pi) {
		t.Error("KAT statement changed")
	}
	// The stored bytes verify against the stored statement, decoded with the
	// strict decoders.
	st := &Statement{Context: []byte(want.Context)}
	for _, h := range want.Keys {
		b, _ := hex.DecodeString(h)
		y, err := group.DecodeNonIdentity(b)
		if err != nil {
			t.Fatal(err)
		}
		st.Keys = append(st.Keys, y)
	}
	decodeRows := func(rows [][]string) [][]group.Ciphertext {
		var out [][]group.Ciphertext
		for _, row := range rows {
			var r []group.Ciphertext
			for _, h := range row {
				b, _ := hex.DecodeString(h)
				ct, err := group.DecodeCiphertext(b, false)
				if err != nil {
					t.Fatal(err)
				}
				r = append(r, ct)
			}
			out = append(out, r)
		}
		return out
	}
	st.Inputs, st.Outputs = decodeRows(want.Inputs), decodeRows(want.Outputs)
	pb, _ := hex.DecodeString(want.Proof)
	p, err := Parse(pb, len(st.Inputs), len(st.Keys))
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := p.MarshalBinary(); !bytes.Equal(out, pb) {
		t.Fatal("KAT proof does not round-trip")
	}
	if err := Verify(st, p, nil); err != nil {
		t.Fatalf("KAT proof does not verify: %v", err)
	}
	// docs/proto-shuffle.md prints the same vector.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "proto-shuffle.md"))
	if err != nil {
		t.Skipf("protocol document not found: %v", err)
	}
	for _, h := range []string{want.Sigma, want.Eta, want.U1, want.C, want.Proof[16 : 16+64], want.Proof[len(want.Proof)-64:]} {
		if !bytes.Contains(doc, []byte(h)) {
			t.Fatalf("docs/proto-shuffle.md lacks KAT value %s", h)
		}
	}
}
