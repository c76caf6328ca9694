package chunker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// sealedTree shares data privately and returns, per position (level,
// index; the root at level 0), the manifest chunks Share emitted.
func sealedTree(t testing.TB, data []byte, b int) (Link, *store, map[[2]int][]byte) {
	t.Helper()
	l, s := share(t, data, "secret-name.txt", "text/plain", b, true)
	root := rootManifest(t, s, l)
	pos := map[[2]int][]byte{{0, 0}: s.chunks[l.ID]}
	level, ids := root.Depth, root.ids()
	for level > 0 {
		var next []ID
		for i, id := range ids {
			pos[[2]int{level, i}] = s.chunks[id]
			m, err := OpenManifest(s.chunks[id], l.Key, level, i)
			if err != nil {
				t.Fatalf("node %d of level %d: %v", i, level, err)
			}
			next = append(next, m.ids()...)
		}
		level, ids = level-1, next
	}
	return l, s, pos
}

// A private file's manifest chunks, root and nodes, are sealed: each is
// exactly b bytes (its size says nothing), decodes without the key as an
// opaque manifest, and shows neither the file's name, its size nor any
// chunk id (a cleartext manifest would show them all).
func TestSealedManifestsHideContents(t *testing.T) {
	b := MinChunkSize
	data := randBytes(7, 40*b)
	l, s, pos := sealedTree(t, data, b)
	if len(pos) < 3 {
		t.Fatalf("%d manifest chunks, want a root and nodes", len(pos))
	}
	var size [8]byte
	binary.BigEndian.PutUint64(size[:], uint64(rootManifest(t, s, l).Size))
	for p, c := range pos {
		if len(c) != b || !IsManifest(c) {
			t.Fatalf("manifest chunk at %v: %d bytes, want %d with the magic", p, len(c), b)
		}
		m, err := DecodeManifest(c)
		if err != nil || !m.Opaque || m.Root || m.ChunkSize != b || m.Name != "" || len(m.Chunks)+len(m.Continuations) != 0 {
			t.Fatalf("manifest chunk at %v without its key: %+v, %v", p, m, err)
		}
		for _, leak := range [][]byte{[]byte("secret-name"), []byte(EncryptedName), size[:]} {
			if bytes.Contains(c, leak) {
				t.Fatalf("manifest chunk at %v shows %q", p, leak)
			}
		}
		for id := range s.chunks {
			if bytes.Contains(c, id[:]) {
				t.Fatalf("manifest chunk at %v shows chunk id %s", p, id)
			}
		}
	}
}

// A sealed manifest opens only with its key, at its own position, and
// untouched.
func TestSealedManifestRejects(t *testing.T) {
	b := MinChunkSize
	l, _, pos := sealedTree(t, randBytes(8, 40*b), b)
	root, node := pos[[2]int{0, 0}], pos[[2]int{1, 1}]
	if _, err := OpenManifest(root, l.Key, 0, 0); err != nil {
		t.Fatal(err)
	}
	flip := func(c []byte, i int) []byte { c = bytes.Clone(c); c[i] ^= 1; return c }
	for _, tc := range []struct {
		name       string
		chunk      []byte
		key        *FileKey
		level, idx int
		want       error
	}{
		{"wrong key", root, &FileKey{1}, 0, 0, ErrDecrypt},
		{"tampered body", flip(root, 500), l.Key, 0, 0, ErrDecrypt},
		{"tampered tag", flip(root, b-1), l.Key, 0, 0, ErrDecrypt},
		{"tampered header", flip(root, 10), l.Key, 0, 0, ErrBadManifest},
		{"truncated", root[:b-1], l.Key, 0, 0, ErrBadManifest},
		{"padded", append(bytes.Clone(root), 0), l.Key, 0, 0, ErrBadManifest},
		{"node as root", node, l.Key, 0, 0, ErrDecrypt},
		{"node at another index", node, l.Key, 1, 0, ErrDecrypt},
		{"root as node", root, l.Key, 1, 0, ErrDecrypt},
	} {
		if _, err := OpenManifest(tc.chunk, tc.key, tc.level, tc.idx); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A private file's root in clear (as shares made before sealing wrote
	// them) is refused.
	fc, _ := newFileCipher(l.Key)
	m, err := fc.openManifest(root, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.Sealed = false
	if _, err := m.encode(); err == nil {
		t.Fatal("a private root encodes in clear")
	}
	// A key that opens a body whose padding is not zero, or whose length
	// overruns, is still refused: only Share's encoding opens.
	for _, tc := range []struct {
		name string
		mod  func(p []byte)
	}{
		{"non-zero padding", func(p []byte) { p[len(p)-1] = 1 }},
		{"overlong length", func(p []byte) { binary.BigEndian.PutUint32(p, uint32(len(p))) }},
	} {
		n := manifestNonce(0, 0)
		p, err := fc.man.Open(nil, n[:], root[sealedHeaderSize:], root[:sealedHeaderSize])
		if err != nil {
			t.Fatal(err)
		}
		tc.mod(p)
		bad := fc.man.Seal(bytes.Clone(root[:sealedHeaderSize]), n[:], p, root[:sealedHeaderSize])
		if _, err := fc.openManifest(bad, 0, 0); !errors.Is(err, ErrBadManifest) || errors.Is(err, ErrDecrypt) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// FuzzOpenManifest: whatever opens under the fixed key re-seals, at the
// same position, to the same bytes (the nonce is the position, the padding
// zero, the body canonical).
func FuzzOpenManifest(f *testing.F) {
	key := (*FileKey)(vectorKey())
	for i, n := range []int{0, 3 * MinChunkSize, 40 * MinChunkSize} {
		s := newStore()
		l, err := Share(bytes.NewReader(randBytes(uint64(i), n)), "seed.txt", "text/plain", MinChunkSize,
			ShareOptions{Encrypt: true, Rand: bytes.NewReader(key[:])}, s.emit)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s.chunks[l.ID], uint8(0), uint8(0))
		for _, c := range s.chunks {
			if IsManifest(c) {
				f.Add(c, uint8(1), uint8(1))
			}
		}
	}
	fc, err := newFileCipher(key)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte, level, idx uint8) {
		m, err := fc.openManifest(in, int(level), int(idx))
		if err != nil {
			return
		}
		out, err := fc.sealManifest(m, int(idx))
		if err != nil {
			t.Fatalf("opened manifest does not seal: %v", err)
		}
		if !bytes.Equal(out, in) {
			t.Fatal("open→seal changed the bytes")
		}
	})
}
