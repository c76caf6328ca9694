package node

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/mix"
)

// testPayload is a well-formed payload (b = 16, k = 1) carrying chunk, with
// a canonically encoded (not valid) signature: publishedRoot only needs
// the payload well formed.
func testPayload(chunk string, sig byte) []byte {
	const b, k = 16, 1
	raw := make([]byte, mix.PayloadSize(b, k))
	raw[0], raw[1] = mix.KindChunk, mix.PayloadVersion
	binary.BigEndian.PutUint32(raw[4:], uint32(len(chunk)))
	raw[8] = 0xaa // request 0
	copy(raw[8+32:], chunk)
	s := group.ScalarFromUint64(uint64(sig))
	copy(raw[len(raw)-mix.SignatureSize:], s.Encode(group.Base().Encode(nil)))
	return raw
}

// TestPublishedRoot: the root of a published batch (§5.2, v3) commits to
// every byte of every entry, though a well-formed payload's leaf hashes
// only its digest D and its signature; a malformed entry gets the ordinary
// leaf over its bytes. The vector is in docs/proto-node.md.
func TestPublishedRoot(t *testing.T) {
	const b, k = 16, 1
	entries := [][]byte{testPayload("abc", 1), testPayload("", 2), testPayload("0123456789abcdef", 3)}
	root := publishedRoot(entries, hashPublished(entries, b, k))
	if got, want := hex.EncodeToString(root[:]), "34dc42024390f662f5dc68236bb15d87085affb840a9cf02b11a0dad63d735a1"; got != want {
		t.Errorf("published root %s, want %s", got, want)
	}
	if root == merkleRoot(entries) {
		t.Fatal("payload leaves equal ordinary leaves")
	}
	for i := range entries {
		for at := range entries[i] {
			changed := make([][]byte, len(entries))
			copy(changed, entries)
			changed[i] = bytes.Clone(entries[i])
			changed[i][at] ^= 1
			ph := hashPublished(changed, b, k)
			if publishedRoot(changed, ph) == root {
				t.Fatalf("entry %d byte %d changed (well formed: %v), root did not", i, at, ph.ok[i])
			}
		}
	}
}
