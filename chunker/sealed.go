package chunker

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Sealed manifests (docs/protocol.md §6.4, docs/proto-chunker.md). Every
// manifest chunk syncs to every client with the public index, so a private
// file's manifest must not show its chunk ids, name or size: its header
// stays in clear (servers index it as a manifest, under the same caps) and
// its body is sealed under a key derived from the file key, padded to a
// whole chunk of b bytes.
//
//	magic 8 ‖ version 1 ‖ kind 1 (= 3) ‖ u32 b ‖ AES-256-GCM(plaintext) (b − 14 bytes)
//	plaintext = u32 n ‖ cleartext manifest (n bytes) ‖ zeros to b − 30 bytes
//
// The associated data is the 14-byte clear header. The nonce is the
// chunk's position in the manifest tree (manifestNonce): a file key seals
// one file, and one tree has one chunk per position, so no nonce repeats.

const (
	// sealedHeaderSize is the clear header: magic 8, version 1, kind 1,
	// chunk size 4.
	sealedHeaderSize = 14
	// sealedOverhead is what a sealed chunk adds to the cleartext
	// manifest: the header, the GCM tag and the u32 length.
	sealedOverhead = sealedHeaderSize + tagSize + 4
)

// infoManifest derives the manifest key from a file key (distinct from the
// data and metadata keys, so their nonces never meet).
const infoManifest = "riffle/v2/file-manifest"

// manifestNonce is the nonce of the manifest chunk at a position: u8 level
// (0 for the root, ℓ for a node of level ℓ), three zero bytes, u64 index
// within the level.
func manifestNonce(level, idx int) [nonceSize]byte {
	var n [nonceSize]byte
	n[0] = byte(level)
	binary.BigEndian.PutUint64(n[4:], uint64(idx))
	return n
}

// sealManifest seals m (a root at level 0, index 0, or a node of level
// m.Level at index idx) into one chunk of exactly b bytes.
func (fc *fileCipher) sealManifest(m *Manifest, idx int) ([]byte, error) {
	m.Sealed = true
	inner, err := m.encode()
	if err != nil {
		return nil, err
	}
	b := m.ChunkSize
	plain := make([]byte, b-sealedHeaderSize-tagSize)
	binary.BigEndian.PutUint32(plain, uint32(len(inner)))
	copy(plain[4:], inner)
	out := make([]byte, 0, b)
	out = append(out, manifestMagic[:]...)
	out = append(out, ManifestVersion, kindSealed)
	out = binary.BigEndian.AppendUint32(out, uint32(b))
	level := 0
	if !m.Root {
		level = m.Level
	}
	n := manifestNonce(level, idx)
	return fc.man.Seal(out, n[:], plain, out[:sealedHeaderSize]), nil
}

// openManifest opens the sealed manifest chunk at a position (level 0 is
// the root) and checks that it is what that position holds: the root, or
// a node of that level, of the chunk size in the clear header.
func (fc *fileCipher) openManifest(chunk []byte, level, idx int) (*Manifest, error) {
	m, err := openManifest(fc, chunk, level, idx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	return m, nil
}

func openManifest(fc *fileCipher, chunk []byte, level, idx int) (*Manifest, error) {
	outer, err := decodeManifest(chunk, false)
	if err != nil {
		return nil, err
	}
	if !outer.Opaque {
		return nil, errors.New("a private file's manifest chunk is not sealed")
	}
	n := manifestNonce(level, idx)
	plain, err := fc.man.Open(nil, n[:], chunk[sealedHeaderSize:], chunk[:sealedHeaderSize])
	if err != nil {
		return nil, fmt.Errorf("%w: sealed manifest at level %d index %d", ErrDecrypt, level, idx)
	}
	ln := binary.BigEndian.Uint32(plain)
	if uint64(ln) > uint64(len(plain)-4) {
		return nil, fmt.Errorf("sealed body of %d bytes claims %d", len(plain)-4, ln)
	}
	for _, c := range plain[4+ln:] {
		if c != 0 {
			return nil, errors.New("sealed manifest padding is not zero")
		}
	}
	m, err := decodeManifest(plain[4:4+ln], true)
	if err != nil {
		return nil, err
	}
	if m.ChunkSize != outer.ChunkSize {
		return nil, fmt.Errorf("sealed manifest of chunk size %d under a header of %d", m.ChunkSize, outer.ChunkSize)
	}
	if (level == 0) != m.Root || (!m.Root && m.Level != level) {
		return nil, fmt.Errorf("sealed %s at level %d", describe(m), level)
	}
	return m, nil
}

// OpenManifest opens a private file's sealed manifest chunk with the file
// key: level 0 and index 0 for the root, else the node's position in the
// tree (docs/proto-chunker.md).
func OpenManifest(chunk []byte, key *FileKey, level, idx int) (*Manifest, error) {
	fc, err := newFileCipher(key)
	if err != nil {
		return nil, err
	}
	return fc.openManifest(chunk, level, idx)
}
