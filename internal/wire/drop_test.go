package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestDropVectors: the drop messages of docs/protocol.md §8 "A dead slot",
// with their fixed sizes and the SHA-256 of their encodings (the bodies of
// the dropreq and dropstep vectors).
func TestDropVectors(t *testing.T) {
	q := &DropReq{Epoch: k32(1), Round: 1, T: 2, In: 5}
	st := &DropStep{Epoch: k32(1), Round: 1, T: 2, In: 5, Out: 3, Route: k64(0x40), Sig: k64(0x80)}
	for _, c := range []struct {
		name string
		b    []byte
		size int
		hash string
	}{
		{"drop-req", q.Marshal(), DropReqSize, "034a56c7afacea8aa49cd5a6b6a7c4cefb9f2c4d7bb1e974bdfff48500680ff0"},
		{"drop-step", st.Marshal(), DropStepSize, "35ff6e2bdb8d4e247d7891f2b41edd68d49637a74ac37b4bf45227fc14e59bb4"},
	} {
		h := sha256.Sum256(c.b)
		if len(c.b) != c.size || hex.EncodeToString(h[:]) != c.hash {
			t.Errorf("%s: %d bytes, sha256 %x; want %d, %s", c.name, len(c.b), h, c.size, c.hash)
		}
	}
	var q2 DropReq
	if err := q2.Unmarshal(q.Marshal()[:DropReqSize-1]); err == nil {
		t.Error("truncated drop request accepted")
	}
}
