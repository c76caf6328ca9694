package shuffle

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// BAT-2: MAL-10 passes a verifier whose weights are all 1 (which shows the
// test has teeth) and is rejected with random weights.
func TestBatchRandomWeightsCatchMAL10(t *testing.T) {
	f := newFixture(t, "bat2", 4, 3)
	p := mal10(t, f.st, f.wit, randPoint(t, newDetReader("D")))
	ch, err := prepare(f.st, p, defaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	ones := func() (*group.Scalar, error) { return one(), nil }
	if err := verifyBatched(f.st, p, ch, ones, group.VarTimeMSM); err != nil {
		t.Fatalf("the all-ones batch should (wrongly) accept MAL-10: %v", err)
	}
	for range 5 {
		if err := Verify(f.st, p, nil); !errors.Is(err, ErrProofInvalid) {
			t.Fatalf("random-weight batch accepted MAL-10: %v", err)
		}
	}
}

// recorder copies what the verifier reads from its weight source.
type recorder struct {
	r   io.Reader
	got bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.got.Write(p[:n])
	return n, err
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

// BAT-3: weights come from the injected source only, fresh in every call.
func TestBatchWeightsSource(t *testing.T) {
	const n, w = 3, 2
	f := newFixture(t, "bat3", n, w)
	p, err := Prove(f.st, f.wit, newDetReader("bat3"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := &recorder{r: rand.Reader}, &recorder{r: rand.Reader}
	if err := Verify(f.st, p, a); err != nil {
		t.Fatal(err)
	}
	if err := Verify(f.st, p, b); err != nil {
		t.Fatal(err)
	}
	want := 16 * (3 + 2*w + n)
	if a.got.Len() != want || b.got.Len() != want {
		t.Fatalf("verifier read %d and %d bytes of weights, want %d", a.got.Len(), b.got.Len(), want)
	}
	if bytes.Equal(a.got.Bytes(), b.got.Bytes()) {
		t.Fatal("two verifications drew the same weights")
	}
	// The weights are exactly the source's bytes, whatever the proof: the
	// verifier calls weight() in a fixed order, reading nothing else.
	ch, err := prepare(f.st, p, defaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	src := newDetReader("weights")
	var drawn []*group.Scalar
	rec := func() (*group.Scalar, error) {
		s, err := group.RandomWeight(src)
		drawn = append(drawn, s)
		return s, err
	}
	if err := verifyBatched(f.st, p, ch, rec, group.VarTimeMSM); err != nil {
		t.Fatal(err)
	}
	check := newDetReader("weights")
	for i, s := range drawn {
		if w, _ := group.RandomWeight(check); w.Equal(s) != 1 {
			t.Fatalf("weight %d is not the source's", i)
		}
	}
	if err := Verify(f.st, p, failingReader{}); err == nil || errors.Is(err, ErrProofInvalid) {
		t.Fatalf("a verifier without entropy must fail with the reader's error, got %v", err)
	}
}

// BAT-4: chunk boundaries. N = 4nw + 4n + 3w + 5 = 1223 for n = 101, w = 2,
// a multiple of none of the chunk sizes.
func TestBatchChunkBoundaries(t *testing.T) {
	const n, w = 101, 2
	if N := 4*n*w + 4*n + 3*w + 5; N%7 == 0 || N%512 == 0 {
		t.Fatalf("N = %d is a multiple of a chunk size", N)
	}
	f := newFixture(t, "bat4", n, w)
	p, err := Prove(f.st, f.wit, newDetReader("bat4"))
	if err != nil {
		t.Fatal(err)
	}
	bad := cloneStatement(f.st)
	bad.Outputs[n-1][1].B = group.NewElement().Add(bad.Outputs[n-1][1].B, group.Base())
	pBad, err := prove(bad, f.wit, newDetReader("bat4 bad"), defaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	msms := map[string]func([]*group.Scalar, []*group.Element) *group.Element{"VarTimeMSM": group.VarTimeMSM, "Pippenger": group.VarTimeMSMPippenger}
	for _, chunk := range []int{1, 7, 512, 4*n*w + 4*n + 3*w + 5} {
		msms[fmt.Sprintf("Straus chunk %d", chunk)] = func(s []*group.Scalar, p []*group.Element) *group.Element {
			return group.VarTimeMSMChunked(s, p, chunk)
		}
	}
	for name, msm := range msms {
		for _, c := range []struct {
			st     *Statement
			p      *Proof
			accept bool
		}{{f.st, p, true}, {bad, pBad, false}} {
			ch, err := prepare(c.st, c.p, defaultSuite)
			if err != nil {
				t.Fatal(err)
			}
			src := newDetReader("w")
			err = verifyBatched(c.st, c.p, ch, func() (*group.Scalar, error) { return group.RandomWeight(src) }, msm)
			if (err == nil) != c.accept {
				t.Fatalf("%s: accept = %v, want %v (%v)", name, err == nil, c.accept, err)
			}
		}
	}
}
