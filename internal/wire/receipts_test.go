package wire

import (
	"bytes"
	"testing"
)

// TestReceiptSizes: a Receipt has its fixed size, a ReceiptSet and an
// Order the sizes their counts give; every truncation and any trailing
// byte fails, and a count beyond its cap is refused before allocation.
func TestReceiptSizes(t *testing.T) {
	r := Receipt{Epoch: k32(1), Server: 2, RegKey: k32(3), RegHash: k32(4), Sig: k64(5)}
	rb := r.Marshal()
	set := ReceiptSet{Epoch: k32(1), RegKey: k32(3), Receipts: []Receipt{r, r}}
	sb := set.Marshal()
	o := Order{Epoch: k32(1), Primary: 1, Keys: [][32]byte{k32(6), k32(7), k32(8)}, Sig: k64(9)}
	ob := o.Marshal()
	if len(rb) != ReceiptSize || len(sb) != ReceiptSetSize(2) || len(ob) != OrderSize(3) {
		t.Fatalf("sizes %d, %d, %d", len(rb), len(sb), len(ob))
	}
	decs := map[string]func([]byte) error{
		"receipt":    func(b []byte) error { return (&Receipt{}).Unmarshal(b) },
		"receiptset": func(b []byte) error { return (&ReceiptSet{}).Unmarshal(b) },
		"order":      func(b []byte) error { return (&Order{}).Unmarshal(b, testLimits) },
	}
	bodies := map[string][]byte{"receipt": rb, "receiptset": sb, "order": ob}
	for name, b := range bodies {
		if err := decs[name](b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range b {
			if decs[name](b[:i]) == nil {
				t.Fatalf("%s truncated to %d decodes", name, i)
			}
		}
		if decs[name](append(bytes.Clone(b), 0)) == nil {
			t.Fatalf("%s with a trailing byte decodes", name)
		}
	}
	huge := append(bytes.Clone(sb[:64]), 0xff, 0xff, 0xff, 0xff)
	if (&ReceiptSet{}).Unmarshal(huge) == nil {
		t.Error("a receipt set of 2^32−1 receipts decodes")
	}
	big := Order{Keys: make([][32]byte, testLimits.Clients+1)}
	if (&Order{}).Unmarshal(big.Marshal(), testLimits) == nil {
		t.Error("an order beyond the client cap decodes")
	}
}
