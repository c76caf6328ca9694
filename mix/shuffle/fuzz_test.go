package shuffle

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse: Parse never panics on any bytes and shape, and whatever it
// accepts re-encodes to exactly the input (canonical, no trailing bytes).
func FuzzParse(f *testing.F) {
	for _, nw := range [][2]int{{1, 1}, {2, 1}, {3, 2}} {
		fx := newFixture(f, "fuzz", nw[0], nw[1])
		p, err := Prove(fx.st, fx.wit, newDetReader("fuzz"))
		if err != nil {
			f.Fatal(err)
		}
		b, _ := p.MarshalBinary()
		f.Add(b, uint8(nw[0]), uint8(nw[1]))
	}
	f.Fuzz(func(t *testing.T, b []byte, n, w uint8) {
		// Small shapes keep the fuzzer near valid lengths; 0 is kept to
		// exercise the shape checks.
		p, err := Parse(b, int(n%8), int(w%4))
		if err != nil {
			if !errors.Is(err, ErrProofEncoding) {
				t.Fatalf("error %v does not wrap ErrProofEncoding", err)
			}
			return
		}
		out, err := p.MarshalBinary()
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("decode→encode round trip differs (%v)", err)
		}
		p.encode() // re-encoding from the decoded fields gives the same bytes
		if !bytes.Equal(p.enc, b) {
			t.Fatal("fields re-encode differently")
		}
	})
}
