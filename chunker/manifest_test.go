package chunker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// rootOf shares data and returns the decoded root and its bytes.
func rootOf(t testing.TB, data []byte, b int, enc bool) (*Manifest, []byte, *store) {
	t.Helper()
	l, s := share(t, data, "f.txt", "text/plain", b, enc)
	raw := s.chunks[l.ID]
	m, err := openRoot(s, l)
	if err != nil {
		t.Fatalf("DecodeManifest of a fresh root: %v", err)
	}
	return m, raw, s
}

func TestManifestFields(t *testing.T) {
	b := MinChunkSize
	data := randBytes(1, 5*b+1)
	m, raw, _ := rootOf(t, data, b, false)
	if !IsManifest(raw) || !m.Root || m.Name != "f.txt" || m.MediaType != "text/plain" || m.Size != int64(len(data)) ||
		m.ChunkSize != b || m.NumChunks != 6 || m.Depth != 0 || len(m.Chunks) != 6 || m.Scheme != SchemeNone {
		t.Fatalf("root manifest %+v", m)
	}
	for i := range 6 {
		if want := Sum(data[i*b : min((i+1)*b, len(data))]); m.Chunks[i] != want {
			t.Fatalf("chunk %d id %s, want %s", i, m.Chunks[i], want)
		}
	}
	if IsManifest(data) {
		t.Fatal("random data taken for a manifest")
	}
	em, _, _ := rootOf(t, data, b, true)
	if em.Name != EncryptedName || em.MediaType != EncryptedMediaType || em.Scheme != SchemeStream ||
		em.Size != int64(len(data))+6*tagSize || bytes.Contains(em.SealedMeta, []byte("f.txt")) {
		t.Fatalf("encrypted root shows %+v", em)
	}
}

// Every manifest chunk Share emits decodes and re-encodes to its bytes.
func TestManifestReencode(t *testing.T) {
	b := MinChunkSize
	_, _, s := rootOf(t, randBytes(2, 1000*b), b, false)
	n := 0
	for id, c := range s.chunks {
		if !IsManifest(c) {
			continue
		}
		n++
		m, err := DecodeManifest(c)
		if err != nil {
			t.Fatalf("manifest %s: %v", id, err)
		}
		out, err := m.Encode()
		if err != nil || !bytes.Equal(out, c) {
			t.Fatalf("manifest %s re-encodes differently (%v)", id, err)
		}
	}
	if n < 3 {
		t.Fatalf("only %d manifest chunks for 1000 chunks of 1 KiB", n)
	}
}

// mutate returns a copy of raw with f applied.
func mutate(raw []byte, f func([]byte) []byte) []byte { return f(bytes.Clone(raw)) }

func TestDecodeManifestRejects(t *testing.T) {
	b := MinChunkSize
	_, raw, _ := rootOf(t, randBytes(3, 3*b+10), b, false)
	// Offsets in a root: magic 0, version 8, kind 9, chunk size 10,
	// size 14, scheme 22, depth 23, chunks 24, name length 28.
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(c []byte) []byte { binary.BigEndian.PutUint32(c[off:], v); return c }
	}
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(c []byte) []byte { binary.BigEndian.PutUint64(c[off:], v); return c }
	}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no manifest magic"},
		{"magic", mutate(raw, func(c []byte) []byte { c[1] = 'X'; return c }), "no manifest magic"},
		{"version", mutate(raw, func(c []byte) []byte { c[8] = 9; return c }), "version 9, want 1"},
		{"kind", mutate(raw, func(c []byte) []byte { c[9] = 7; return c }), "unknown kind 7"},
		{"chunk size small", mutate(raw, put32(10, 512)), "chunk size 512 outside"},
		{"chunk size large", mutate(raw, put32(10, 1<<30)), "chunk size 1073741824 outside"},
		{"2^32-1 chunks", mutate(raw, put32(24, 1<<32-1)), "4294967295 chunks, at most"},
		{"size 2^60", mutate(raw, put64(14, 1<<60)), "does not fit in 4 chunks"},
		{"size 2^64-1", mutate(raw, put64(14, 1<<64-1)), "too large"},
		{"size too small", mutate(raw, put64(14, uint64(2*b))), "makes 2 chunks, manifest says 4"},
		{"scheme", mutate(raw, func(c []byte) []byte { c[22] = 5; return c }), "unknown scheme 5"},
		{"depth", mutate(raw, func(c []byte) []byte { c[23] = 1; return c }), "depth 1, but 4 chunks"},
		{"depth huge", mutate(raw, func(c []byte) []byte { c[23] = 200; return c }), "depth 200, at most"},
		{"truncated", raw[:len(raw)-1], "claims 4 ids but 127 bytes follow"},
		{"trailing", append(bytes.Clone(raw), 0), "claims 4 ids but 129 bytes follow"},
		{"header cut", raw[:20], "size needs 8 bytes, 6 left"},
		{"name", mutate(raw, func(c []byte) []byte { copy(c[30:], "../"); return c }), "not a safe file name"},
		{"too long for chunk", append(bytes.Clone(raw), make([]byte, b)...), "exceed its room of 1024 bytes"},
		{"encrypted without sealed", mutate(raw, func(c []byte) []byte { c[22] = 1; return c }), "encrypted"},
	}
	for _, tc := range cases {
		_, err := DecodeManifest(tc.in)
		if err == nil || !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: DecodeManifest = %v, want error with %q", tc.name, err, tc.want)
		}
	}
}

func TestEncodeRejectsInconsistent(t *testing.T) {
	m := &Manifest{Root: true, ChunkSize: MinChunkSize, Name: "a", MediaType: DefaultMediaType, Size: 1 << 40, NumChunks: 1 << 30}
	if _, err := m.Encode(); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("Encode of 2^30 chunks: %v", err)
	}
	node := &Manifest{ChunkSize: MinChunkSize, Level: 1, Chunks: make([]ID, nodeCap(MinChunkSize, false)+1)}
	if _, err := node.Encode(); err == nil || !strings.Contains(err.Error(), "want 1 to 31") {
		t.Fatalf("Encode of an overfull node: %v", err)
	}
}

func FuzzDecodeManifest(f *testing.F) {
	for i, n := range []int{0, 1, 3 * MinChunkSize, 40 * MinChunkSize} {
		for _, enc := range []bool{false, true} {
			s := newStore()
			if _, err := Share(bytes.NewReader(randBytes(uint64(i), n)), "seed.txt", "text/plain", MinChunkSize,
				ShareOptions{Encrypt: enc, Rand: detRand(1)}, s.emit); err != nil {
				f.Fatal(err)
			}
			for _, c := range s.chunks {
				if IsManifest(c) {
					f.Add(c)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := DecodeManifest(in)
		if err != nil {
			return
		}
		if m.Opaque {
			// A sealed chunk: only its clear header and length are read.
			if !IsManifest(in) || len(in) != m.ChunkSize || m.Root {
				t.Fatalf("opaque manifest of %d bytes taken as %+v", len(in), m)
			}
			return
		}
		out, err := m.Encode()
		if err != nil {
			t.Fatalf("decoded manifest does not encode: %v", err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("decode→encode changed the bytes")
		}
	})
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add(encodeMeta("a.txt", "text/plain"))
	f.Add(encodeMeta(strings.Repeat("n", MaxNameBytes), "application/x-"+strings.Repeat("t", 100)))
	f.Add([]byte{0, 3, '.', '.', '/', 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		name, mt, err := decodeMeta(p)
		if err != nil {
			return
		}
		if SanitizeName(name) != name || !bytes.Equal(encodeMeta(name, mt), p) {
			t.Fatalf("decodeMeta accepted %q / %q, which does not re-encode to its input", name, mt)
		}
	})
}
