package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
)

func fill32(b byte) (a [32]byte) {
	for i := range a {
		a[i] = b
	}
	return a
}

func fill64(b byte) (a [64]byte) {
	for i := range a {
		a[i] = b
	}
	return a
}

// blameVectors are the round-blame messages of docs/protocol.md §8, with
// the SHA-256 of their encodings.
func blameVectors() (*Accuse, *BlameReq, *BlameStep) {
	ev := Evidence{Entry: []byte("onion"), Path: [][32]byte{fill32(0x44), fill32(0x45)}, Root: fill32(0x55), Sig: fill64(0x66)}
	a := &Accuse{Epoch: fill32(0x01), Round: 3, S: 1, Pos: 2, Zp: fill32(0x22), ZpProof: fill64(0x33), In: ev, Sig: fill64(0x77)}
	q := &BlameReq{Epoch: fill32(0x01), Round: 3, T: 0, Out: 2}
	st := &BlameStep{Epoch: fill32(0x01), Round: 3, T: 0, Out: 2, In: 5, Route: bytes.Repeat([]byte{0x88}, 64),
		Z: fill32(0x11), ZProof: fill64(0x12), Zp: fill32(0x21), ZpProof: fill64(0x23),
		Input: Evidence{Entry: []byte("client onion"), Sig: fill64(0x99)}, Sig: fill64(0xaa)}
	return a, q, st
}

func TestBlameVectors(t *testing.T) {
	a, q, st := blameVectors()
	for _, c := range []struct {
		name string
		b    []byte
		size int
		hash string
	}{
		{"accuse", a.Marshal(), 32 + 4 + 2 + 4 + 32 + 64 + (4 + 5 + 1 + 2*32 + 32 + 64) + 64, "04f2bad8482d1edf410e522ce9cd76bcaa8fa3808026802a5395a7f7180b98e6"},
		{"blame-req", q.Marshal(), 32 + 4 + 2 + 4, "fa7d070f70ddab260f045f7dae243277405967db2baf9cab1044ef09a6e91dd8"},
		{"blame-step", st.Marshal(), 32 + 4 + 2 + 4 + 4 + (4 + 64) + 32 + 64 + 32 + 64 + (4 + 12 + 1 + 32 + 64) + 64, "85abc61e3f185c5bcafa2b37c7de32af256f3726cb471e06d762af8cbb307607"},
	} {
		if len(c.b) != c.size {
			t.Errorf("%s: %d bytes, want %d", c.name, len(c.b), c.size)
		}
		h := sha256.Sum256(c.b)
		t.Logf("%s: %d bytes, sha256 %s", c.name, len(c.b), hex.EncodeToString(h[:]))
		if c.hash != "" && hex.EncodeToString(h[:]) != c.hash {
			t.Errorf("%s: sha256 %x, want %s", c.name, h, c.hash)
		}
	}
}

func TestBlameRoundTrip(t *testing.T) {
	a, q, st := blameVectors()
	var a2 Accuse
	if err := a2.Unmarshal(a.Marshal(), 16); err != nil || !bytes.Equal(a2.Marshal(), a.Marshal()) {
		t.Fatalf("accuse: %v", err)
	}
	var q2 BlameReq
	if err := q2.Unmarshal(q.Marshal()); err != nil || q2 != *q {
		t.Fatalf("blame request: %v", err)
	}
	var st2 BlameStep
	if err := st2.Unmarshal(st.Marshal(), 16); err != nil || !bytes.Equal(st2.Marshal(), st.Marshal()) {
		t.Fatalf("blame step: %v", err)
	}
}

func TestBlameDecodeRejects(t *testing.T) {
	a, _, st := blameVectors()
	b := a.Marshal()
	var x Accuse
	// An entry above the caller's cap.
	if err := x.Unmarshal(b, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("entry over cap: %v", err)
	}
	// Truncated and trailing bytes.
	if err := x.Unmarshal(b[:len(b)-1], 16); !errors.Is(err, ErrShort) {
		t.Fatalf("truncated: %v", err)
	}
	if err := x.Unmarshal(append(b, 0), 16); err == nil {
		t.Fatal("trailing byte accepted")
	}
	// A Merkle path longer than any tree: the count byte sits after the
	// entry (4 + 5 bytes from offset 138).
	bad := append([]byte(nil), b...)
	bad[32+4+2+4+32+64+4+5] = MaxMerklePath + 1
	if err := x.Unmarshal(bad, 16); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("long path: %v", err)
	}
	// A route proof above its cap.
	st.Route = make([]byte, MaxRouteProof+1)
	var y BlameStep
	if err := y.Unmarshal(st.Marshal(), 16); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("long route proof: %v", err)
	}
}

func FuzzAccuse(f *testing.F) {
	a, _, _ := blameVectors()
	f.Add(a.Marshal())
	f.Fuzz(func(t *testing.T, body []byte) {
		var m Accuse
		if m.Unmarshal(body, 1<<16) != nil {
			return
		}
		if out := m.Marshal(); !bytes.Equal(out, body) {
			t.Fatalf("decode→encode changed the bytes")
		}
	})
}

func FuzzBlameStep(f *testing.F) {
	_, _, st := blameVectors()
	f.Add(st.Marshal())
	f.Fuzz(func(t *testing.T, body []byte) {
		var m BlameStep
		if m.Unmarshal(body, 1<<16) != nil {
			return
		}
		if out := m.Marshal(); !bytes.Equal(out, body) {
			t.Fatalf("decode→encode changed the bytes")
		}
	})
}

func TestEquivocationRoundTrip(t *testing.T) {
	ev := Equivocation{A: Root{Epoch: fill32(1), Round: 3, S: 1, Root: fill32(2), Sig: fill64(3)}, B: Root{Epoch: fill32(1), Round: 3, S: 1, Root: fill32(4), Sig: fill64(5)}}
	b := ev.Marshal()
	if len(b) != 2*rootSize {
		t.Fatalf("%d bytes", len(b))
	}
	var x Equivocation
	if err := x.Unmarshal(b); err != nil || x != ev {
		t.Fatalf("round trip: %v", err)
	}
	if x.Unmarshal(b[:len(b)-1]) == nil || x.Unmarshal(append(b, 0)) == nil {
		t.Fatal("wrong length accepted")
	}
}

func TestDoubleSubmitRoundTrip(t *testing.T) {
	m := DoubleSubmit{Epoch: fill32(1), Round: 3, Slot: 2, HashA: fill32(4), SigA: fill64(5), HashB: fill32(6), SigB: fill64(7)}
	b := m.Marshal()
	h := sha256.Sum256(b)
	if len(b) != doubleSubmitSize || hex.EncodeToString(h[:]) != "7e479628900c25a06c6d74630addf0e74d3afdcb74f49825ec4f48fb88933538" {
		t.Errorf("double submit: %d bytes, sha256 %x", len(b), h)
	}
	var x DoubleSubmit
	if err := x.Unmarshal(b); err != nil || x != m {
		t.Fatalf("round trip: %v", err)
	}
	if x.Unmarshal(b[:len(b)-1]) == nil || x.Unmarshal(append(b, 0)) == nil {
		t.Fatal("wrong length accepted")
	}
}
