package proto

import "testing"

// TestCheckX25519 rejects low-order server keys D_j (§6.2) and accepts a
// real one.
func TestCheckX25519(t *testing.T) {
	virtual(t, func(t *testing.T) {
		var zero [32]byte
		one := [32]byte{1}
		for _, k := range [][32]byte{zero, one} {
			if err := CheckX25519(k[:]); err == nil {
				t.Fatalf("low-order key %x accepted", k[:4])
			}
		}
		if err := CheckX25519(LowOrderProbe.PublicKey().Bytes()); err != nil {
			t.Fatalf("valid key refused: %v", err)
		}
	})
}
