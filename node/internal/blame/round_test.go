package blame

import (
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestMerklePath: every entry of every batch size proves against the root
// of proto.MerkleRoot, and nothing else does.
func TestMerklePath(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 17; n++ {
		entries := make([][]byte, n)
		for i := range entries {
			entries[i] = []byte(fmt.Sprintf("entry %d of %d", i, n))
		}
		root := proto.MerkleRoot(entries)
		for i := range entries {
			path := MerklePath(entries, i)
			if !MerkleCheck(n, i, entries[i], path, root) {
				t.Fatalf("n=%d: entry %d does not prove", n, i)
			}
			if MerkleCheck(n, i, []byte("other"), path, root) {
				t.Fatalf("n=%d: a changed entry %d proves", n, i)
			}
			if n > 1 && MerkleCheck(n, (i+1)%n, entries[i], path, root) {
				t.Fatalf("n=%d: entry %d proves at another position", n, i)
			}
			if len(path) > 0 {
				bad := append([][32]byte(nil), path...)
				bad[0][0] ^= 1
				if MerkleCheck(n, i, entries[i], bad, root) {
					t.Fatalf("n=%d: a changed path proves entry %d", n, i)
				}
				if MerkleCheck(n, i, entries[i], path[:len(path)-1], root) {
					t.Fatalf("n=%d: a short path proves entry %d", n, i)
				}
			}
			if MerkleCheck(n, i, entries[i], append(path, root), root) {
				t.Fatalf("n=%d: a long path proves entry %d", n, i)
			}
		}
		if MerkleCheck(n, n, entries[0], nil, root) || MerkleCheck(n, -1, entries[0], nil, root) {
			t.Fatalf("n=%d: a position out of range proves", n)
		}
	}
}
