package blame

import (
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Round blame's evidence (docs/protocol.md §5.2, §8): the Merkle path
// that proves an input entry against its batch's signed root, and the
// digests of the signed accusation, blame step and drop step.

// MerklePath returns the sibling hashes from entry i up to the root of
// merkleRoot(entries), bottom first; a level where i is a promoted odd node
// contributes nothing.
func MerklePath(entries [][]byte, i int) [][32]byte {
	level := make([][32]byte, len(entries))
	for j, x := range entries {
		level[j] = merkleLeaf(j, x)
	}
	var path [][32]byte
	for len(level) > 1 {
		if i^1 < len(level) {
			path = append(path, level[i^1])
		}
		next := level[:0:0]
		for j := 0; j < len(level); j += 2 {
			if j+1 == len(level) {
				next = append(next, level[j])
				continue
			}
			next = append(next, proto.TaggedHash(proto.TagMerkleNd, level[j][:], level[j+1][:]))
		}
		level, i = next, i/2
	}
	return path
}

func merkleLeaf(i int, entry []byte) [32]byte {
	var pos wire.Enc
	pos.U32(uint32(i))
	return proto.TaggedHash(proto.TagMerkleLf, pos.B, entry)
}

// MerkleCheck reports whether entry is at position i of a batch of n
// entries with the given root.
func MerkleCheck(n, i int, entry []byte, path [][32]byte, root [32]byte) bool {
	if i < 0 || i >= n {
		return false
	}
	h := merkleLeaf(i, entry)
	for size := n; size > 1; size = (size + 1) / 2 {
		if i^1 < size {
			if len(path) == 0 {
				return false
			}
			if i%2 == 0 {
				h = proto.TaggedHash(proto.TagMerkleNd, h[:], path[0][:])
			} else {
				h = proto.TaggedHash(proto.TagMerkleNd, path[0][:], h[:])
			}
			path = path[1:]
		}
		i /= 2
	}
	return len(path) == 0 && h == root
}

func AccuseDigest(a *wire.Accuse) [32]byte {
	b := a.Marshal()
	return proto.TaggedHash(tagAccuse, b[:len(b)-64])
}

func BlameStepDigest(st *wire.BlameStep) [32]byte {
	b := st.Marshal()
	return proto.TaggedHash(tagBlameStep, b[:len(b)-64])
}

const tagDropStep = "riffle/v3/drop-step"

func DropStepDigest(st *wire.DropStep) [32]byte {
	b := st.Marshal()
	return proto.TaggedHash(tagDropStep, b[:len(b)-64])
}

const (
	tagAccuse    = "riffle/v2/accuse"
	tagBlameStep = "riffle/v2/blame-step"
)
