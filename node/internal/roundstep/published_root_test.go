package roundstep

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// testPayload is a well-formed payload (b = 16, k = 1) carrying chunk, with
// a canonically encoded (not valid) signature: PublishedRoot only needs
// the payload well formed.
func testPayload(chunk string, sig byte) []byte {
	const b, k = 16, 1
	raw := make([]byte, mix.PayloadSize(b, k))
	raw[0], raw[1] = mix.KindChunk, mix.PayloadVersion
	binary.BigEndian.PutUint32(raw[4:], uint32(len(chunk)))
	raw[8] = 0xaa // request 0
	copy(raw[8+32:], chunk)
	s := group.ScalarFromUint64(uint64(sig))
	copy(raw[len(raw)-mix.SignatureSize:], append(group.Base().Bytes(), s.Bytes()...))
	return raw
}

// TestPublishedRoot: the root of a published batch (§5.2, v3) commits to
// every byte of every entry, though a well-formed payload's leaf hashes
// only its digest D and its signature; a malformed entry gets the ordinary
// leaf over its bytes. The vector is in docs/proto-node.md.
func TestPublishedRoot(t *testing.T) {
	t.Parallel()
	const b, k = 16, 1
	entries := [][]byte{testPayload("abc", 1), testPayload("", 2), testPayload("0123456789abcdef", 3)}
	root := PublishedRoot(entries, HashPublished(entries, b, k))
	if got, want := hex.EncodeToString(root[:]), "34dc42024390f662f5dc68236bb15d87085affb840a9cf02b11a0dad63d735a1"; got != want {
		t.Errorf("published root %s, want %s", got, want)
	}
	if root == proto.MerkleRoot(entries) {
		t.Fatal("payload leaves equal ordinary leaves")
	}
	for i := range entries {
		for at := range entries[i] {
			changed := make([][]byte, len(entries))
			copy(changed, entries)
			changed[i] = bytes.Clone(entries[i])
			changed[i][at] ^= 1
			ph := HashPublished(changed, b, k)
			if PublishedRoot(changed, ph) == root {
				t.Fatalf("entry %d byte %d changed (well formed: %v), root did not", i, at, ph.OK[i])
			}
		}
	}
}

// BenchmarkPublishedHashing: the hashing a server does over a published
// batch of n = 200 payloads, b = 256 KiB, k = 1, before the signature MSM
// (identical in both): v2 = the Merkle leaf over each entry, SHA-256 of
// each payload's body for its pseudonym challenge, and SHA-256 of each
// chunk for its id; v3 = HashPayloads (the chunk hashed once) and the
// published root. Both on all cores, as the node runs them.
func BenchmarkPublishedHashing(b *testing.B) {
	const n, bb, k = 200, 256 << 10, 1
	for _, kind := range []string{"chunks", "covers"} {
		entries := make([][]byte, n)
		for i := range entries {
			raw := make([]byte, mix.PayloadSize(bb, k))
			raw[0], raw[1] = mix.KindCover, mix.PayloadVersion
			if kind == "chunks" {
				raw[0] = mix.KindChunk
				binary.BigEndian.PutUint32(raw[4:], bb)
				for j := 8 + 32*k; j < 8+32*k+bb; j++ {
					raw[j] = byte(i + j)
				}
			}
			copy(raw[len(raw)-mix.SignatureSize:], append(group.Base().Bytes(), group.ScalarFromUint64(1).Bytes()...))
			entries[i] = raw
		}
		b.Run("v2/"+kind, func(b *testing.B) {
			b.SetBytes(int64(n * len(entries[0])))
			for range b.N {
				proto.MerkleRoot(entries) // serial in v2, as the node ran it
				parallelFor(n, func(q int) {
					raw := entries[q]
					sha256.Sum256(raw[:len(raw)-mix.SignatureSize])
					if raw[0] == mix.KindChunk {
						sha256.Sum256(raw[8+32*k : 8+32*k+int(binary.BigEndian.Uint32(raw[4:]))])
					}
				})
			}
		})
		b.Run("v3/"+kind, func(b *testing.B) {
			b.SetBytes(int64(n * len(entries[0])))
			for range b.N {
				ph := HashPublished(entries, bb, k)
				PublishedRoot(entries, ph)
			}
		})
	}
}

// parallelFor runs f(0..n-1) on all cores (mix.VerifyPayloads hashed so).
func parallelFor(n int, f func(int)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}
