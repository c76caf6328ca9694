package node

import (
	"crypto/rand"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// randomReveals is m fresh r_j (reveal_test.go's, which moved to
// node/internal/proto with reveal.go).
func randomReveals(t *testing.T, m int) [][wire.CommitSize]byte {
	out := make([][wire.CommitSize]byte, m)
	for j := range out {
		if _, err := rand.Read(out[j][:]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
