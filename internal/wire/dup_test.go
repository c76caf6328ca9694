package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"testing"
)

func dupVectors() (*DupAbort, *DupProof) {
	a := &DupAbort{S: 1, Comp: 3, SlotA: 2, SlotB: 7, Sigs: make([][64]byte, 3)}
	p := &DupProof{Slot: 7}
	for i := range 32 {
		a.Epoch[i], a.Value[i], p.Epoch[i] = byte(i), byte(0x40+i), byte(i)
	}
	for j := range a.Sigs {
		for i := range 64 {
			a.Sigs[j][i] = byte(0x80 + 16*j + i)
		}
	}
	for i := range 64 {
		p.Proof[i] = byte(0xc0 + i)
	}
	return a, p
}

// The encodings are pinned by their SHA-256; decode(encode(x)) == x; every
// truncation and any trailing byte fails.
func TestDupMessages(t *testing.T) {
	a, p := dupVectors()
	ab, pb := a.Marshal(), p.Marshal()
	want := map[string]string{"dupabort": "d3ee162c7008cbcdfc2dba3c708f859f7c1c987b39d1f02408371f331e381655", "dupproof": "e9f94011c08d2329e11edad3653362163bfaa8fbd1cda4c0f1b68f53bdcf354b"}
	for name, b := range map[string][]byte{"dupabort": ab, "dupproof": pb} {
		h := sha256.Sum256(b)
		if got := hex.EncodeToString(h[:]); got != want[name] {
			t.Errorf("%s: sha256 %s, want %s", name, got, want[name])
		}
	}
	if len(ab) != DupAbortSize(3) || len(pb) != 32+4+DupProofSize {
		t.Errorf("sizes %d, %d", len(ab), len(pb))
	}
	var a2 DupAbort
	var p2 DupProof
	if err := a2.Unmarshal(ab); err != nil || !reflect.DeepEqual(&a2, a) {
		t.Errorf("abort round trip: %v", err)
	}
	if err := p2.Unmarshal(pb); err != nil || p2 != *p {
		t.Errorf("proof round trip: %v", err)
	}
	for i := range ab {
		if (&DupAbort{}).Unmarshal(ab[:i]) == nil {
			t.Fatalf("abort truncated to %d decodes", i)
		}
	}
	for i := range pb {
		if (&DupProof{}).Unmarshal(pb[:i]) == nil {
			t.Fatalf("proof truncated to %d decodes", i)
		}
	}
	if (&DupAbort{}).Unmarshal(append(bytes.Clone(ab), 0)) == nil || (&DupProof{}).Unmarshal(append(bytes.Clone(pb), 0)) == nil {
		t.Error("trailing byte decodes")
	}
	// A signature count beyond the cap is refused before allocation.
	big := bytes.Clone(ab[:80])
	big = append(big, 0xff, 0xff, 0xff, 0xff)
	if (&DupAbort{}).Unmarshal(big) == nil {
		t.Error("huge signature count decodes")
	}
}

func FuzzDupAbort(f *testing.F) {
	a, _ := dupVectors()
	f.Add(a.Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		var m DupAbort
		if m.Unmarshal(b) != nil {
			return
		}
		if !bytes.Equal(m.Marshal(), b) {
			t.Fatal("decode→encode changed the bytes")
		}
	})
}

func FuzzDupProof(f *testing.F) {
	_, p := dupVectors()
	f.Add(p.Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		var m DupProof
		if m.Unmarshal(b) != nil {
			return
		}
		if !bytes.Equal(m.Marshal(), b) {
			t.Fatal("decode→encode changed the bytes")
		}
	})
}
