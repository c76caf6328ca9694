package chunker

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// store keeps emitted chunks, as the network would.
type store struct {
	chunks map[ID][]byte
	order  []ID // emission order, repeats included
}

func newStore() *store { return &store{chunks: make(map[ID][]byte)} }

func (s *store) emit(id ID, chunk []byte) error {
	if Sum(chunk) != id {
		return errors.New("emitted id does not match chunk")
	}
	s.chunks[id] = bytes.Clone(chunk)
	s.order = append(s.order, id)
	return nil
}

// detRand is a deterministic byte source for keys and file contents.
func detRand(seed uint64) io.Reader { return rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 7}) }

func randBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	if _, err := io.ReadFull(detRand(seed), b); err != nil {
		panic(err)
	}
	return b
}

func share(t testing.TB, data []byte, name, mt string, b int, encrypt bool) (Link, *store) {
	t.Helper()
	s := newStore()
	l, err := Share(bytes.NewReader(data), name, mt, b, ShareOptions{Encrypt: encrypt, Rand: detRand(99)}, s.emit)
	if err != nil {
		t.Fatalf("Share(%d bytes, b=%d, encrypt=%v): %v", len(data), b, encrypt, err)
	}
	if got := s.order[len(s.order)-1]; got != l.ID {
		t.Fatalf("last emitted chunk %s is not the root %s", got, l.ID)
	}
	return l, s
}

// fetchAll drives an assembler to completion, feeding what Needed asks for
// in a random order, and returns the final path.
func fetchAll(t testing.TB, a *Assembler, s *store, rng *rand.Rand) string {
	t.Helper()
	for range 64 {
		need := a.Needed()
		if len(need) == 0 {
			break
		}
		rng.Shuffle(len(need), func(i, j int) { need[i], need[j] = need[j], need[i] })
		for _, id := range need {
			c, ok := s.chunks[id]
			if !ok {
				t.Fatalf("assembler needs %s, which was never emitted", id)
			}
			if err := a.Add(id, c); err != nil {
				t.Fatalf("Add(%s): %v", id, err)
			}
		}
	}
	p, err := a.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return p
}

func roundTrip(t testing.TB, data []byte, b int, encrypt bool, rng *rand.Rand) {
	t.Helper()
	l, s := share(t, data, "file.bin", "application/x-test", b, encrypt)
	dir := t.TempDir()
	a, err := NewAssembler(dir, l, s.chunks[l.ID], AssembleOptions{})
	if err != nil {
		t.Fatalf("NewAssembler: %v", err)
	}
	p := fetchAll(t, a, s, rng)
	if p != filepath.Join(dir, "file.bin") || a.MediaType() != "application/x-test" {
		t.Fatalf("path %q media type %q", p, a.MediaType())
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("round trip of %d bytes (b=%d, encrypt=%v) gave %d different bytes", len(data), b, encrypt, len(got))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("working files left behind: %v", ents)
	}
}

// openRoot decodes the root manifest of link l, opening it with the link's
// key if the file is private.
func openRoot(s *store, l Link) (*Manifest, error) {
	if l.Key != nil {
		return OpenManifest(s.chunks[l.ID], l.Key, 0, 0)
	}
	return DecodeManifest(s.chunks[l.ID])
}

func rootManifest(t testing.TB, s *store, l Link) *Manifest {
	t.Helper()
	m, err := openRoot(s, l)
	if err != nil {
		t.Fatalf("root manifest: %v", err)
	}
	return m
}
