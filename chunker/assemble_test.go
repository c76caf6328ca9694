package chunker

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataIDs returns the first n emitted ids: Share emits the data chunks
// first, in file order.
func dataIDs(s *store, n int) []ID { return append([]ID(nil), s.order[:n]...) }

// rebuild makes a new root over ids, as a hostile sharer could, keeping the
// metadata of m (sealed metadata too unless reseal is given).
func rebuild(t *testing.T, m *Manifest, ids []ID, size int64, s *store, key *FileKey, resealMeta bool) Link {
	t.Helper()
	r := *m
	r.Chunks, r.Continuations, r.NumChunks, r.Size = nil, nil, len(ids), size
	var fc *fileCipher
	if key != nil {
		var err error
		if fc, err = newFileCipher(key); err != nil {
			t.Fatal(err)
		}
		if resealMeta {
			r.SealedMeta = fc.sealMeta("f.txt", "text/plain", r.ChunkSize, size, len(ids))
		}
	}
	id, err := emitTree(&r, ids, fc, s.emit)
	if err != nil {
		t.Fatal(err)
	}
	return Link{ID: id, Key: key}
}

func addAll(t *testing.T, a *Assembler, s *store) {
	t.Helper()
	for range 8 {
		need := a.Needed()
		if len(need) == 0 {
			return
		}
		for _, id := range need {
			if err := a.Add(id, s.chunks[id]); err != nil {
				t.Fatalf("Add: %v", err)
			}
		}
	}
}

func TestEncryptedFailures(t *testing.T) {
	b := MinChunkSize
	data := randBytes(4, 4*b)
	l, s := share(t, data, "f.txt", "text/plain", b, true)
	m := rootManifest(t, s, l)
	n := m.NumChunks
	ids := dataIDs(s, n)

	t.Run("wrong key", func(t *testing.T) {
		bad := Link{ID: l.ID, Key: &FileKey{1}}
		_, err := NewAssembler(t.TempDir(), bad, s.chunks[l.ID], AssembleOptions{})
		if !errors.Is(err, ErrDecrypt) {
			t.Fatalf("wrong key: %v", err)
		}
	})
	t.Run("no key", func(t *testing.T) {
		_, err := NewAssembler(t.TempDir(), Link{ID: l.ID}, s.chunks[l.ID], AssembleOptions{})
		if !errors.Is(err, ErrBadLink) || !strings.Contains(err.Error(), "no key") {
			t.Fatalf("no key: %v", err)
		}
	})
	t.Run("tampered chunk in transit", func(t *testing.T) {
		a, err := NewAssembler(t.TempDir(), l, s.chunks[l.ID], AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		c := bytes.Clone(s.chunks[ids[2]])
		c[100] ^= 1
		if err := a.Add(ids[2], c); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "data chunk 2") {
			t.Fatalf("tampered chunk: %v", err)
		}
	})
	// A hostile sharer can list a tampered ciphertext under its true hash:
	// only the AEAD catches it, at the chunk's index.
	t.Run("tampered ciphertext listed", func(t *testing.T) {
		c := bytes.Clone(s.chunks[ids[2]])
		c[100] ^= 1
		s.emit(Sum(c), c)
		bad := append([]ID(nil), ids...)
		bad[2] = Sum(c)
		l2 := rebuild(t, m, bad, m.Size, s, l.Key, false)
		l2.Key = l.Key
		a, err := NewAssembler(t.TempDir(), l2, s.chunks[l2.ID], AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		addAll(t, a, s)
		if _, err := a.Finish(); !errors.Is(err, ErrDecrypt) || !strings.Contains(err.Error(), "data chunk 2") {
			t.Fatalf("tampered ciphertext: %v", err)
		}
	})
	t.Run("reordered", func(t *testing.T) {
		bad := append([]ID(nil), ids...)
		bad[0], bad[1] = bad[1], bad[0]
		l2 := rebuild(t, m, bad, m.Size, s, l.Key, false)
		l2.Key = l.Key
		a, err := NewAssembler(t.TempDir(), l2, s.chunks[l2.ID], AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		addAll(t, a, s)
		if _, err := a.Finish(); !errors.Is(err, ErrDecrypt) || !strings.Contains(err.Error(), "data chunk 0") {
			t.Fatalf("reordered: %v", err)
		}
	})
	// Dropping the last chunk: the metadata is bound to the count, and,
	// resealed, the new last chunk lacks the last-segment flag.
	t.Run("truncated", func(t *testing.T) {
		short := ids[:n-1]
		l2 := rebuild(t, m, short, int64(n-1)*int64(b), s, l.Key, false)
		l2.Key = l.Key
		if _, err := NewAssembler(t.TempDir(), l2, s.chunks[l2.ID], AssembleOptions{}); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("truncated, old metadata: %v", err)
		}
		l3 := rebuild(t, m, short, int64(n-1)*int64(b), s, l.Key, true)
		a, err := NewAssembler(t.TempDir(), l3, s.chunks[l3.ID], AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		addAll(t, a, s)
		if _, err := a.Finish(); !errors.Is(err, ErrDecrypt) || !strings.Contains(err.Error(), "data chunk 3") {
			t.Fatalf("truncated, resealed: %v", err)
		}
	})
}

func TestAssemblerErrors(t *testing.T) {
	b := MinChunkSize
	data := randBytes(5, 3*b+7)
	l, s := share(t, data, "f.txt", "", b, false)
	m := rootManifest(t, s, l)
	dir := t.TempDir()
	if _, err := NewAssembler(dir, Link{ID: Sum([]byte("other"))}, s.chunks[l.ID], AssembleOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("root of another link: %v", err)
	}
	if _, err := NewAssembler(dir, Link{ID: l.ID, Key: &FileKey{}}, s.chunks[l.ID], AssembleOptions{}); !errors.Is(err, ErrBadLink) {
		t.Fatalf("key for a public file: %v", err)
	}
	a, err := NewAssembler(dir, l, s.chunks[l.ID], AssembleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Add(Sum([]byte("stranger")), []byte("stranger")); !errors.Is(err, ErrNotNeeded) {
		t.Fatalf("unknown chunk: %v", err)
	}
	if err := a.Add(m.Chunks[1], s.chunks[m.Chunks[0]]); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "data chunk 1") {
		t.Fatalf("wrong bytes: %v", err)
	}
	for _, i := range []int{0, 1, 3} {
		if err := a.Add(m.Chunks[i], s.chunks[m.Chunks[i]]); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Add(m.Chunks[0], s.chunks[m.Chunks[0]]); err != nil {
		t.Fatalf("second Add of a held chunk: %v", err)
	}
	if need := a.Needed(); len(need) != 1 || need[0] != m.Chunks[2] {
		t.Fatalf("Needed = %v, want only chunk 2", need)
	}
	if h, n := a.Progress(); h != 3 || n != 4 {
		t.Fatalf("Progress = %d/%d", h, n)
	}
	if _, err := a.Finish(); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "1 of 4 chunks missing, first data chunk 2") {
		t.Fatalf("Finish incomplete: %v", err)
	}
	a.Add(m.Chunks[2], s.chunks[m.Chunks[2]])
	// A file of that name exists already: no silent overwrite.
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Finish(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Finish over an existing file: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(got) != "mine" {
		t.Fatal("existing file was replaced")
	}
	a.Close()
	a2, err := NewAssembler(dir, l, s.chunks[l.ID], AssembleOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(a2.Needed()) != 0 {
		t.Fatal("resumed assembler lost chunks")
	}
	if p, err := a2.Finish(); err != nil {
		t.Fatalf("Finish with Overwrite: %v", err)
	} else if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatal("overwritten file has the wrong content")
	}
}

// Resumption: a download stops halfway, a slot on disk is corrupted, and a
// new assembler keeps exactly the chunks that still verify, manifest nodes
// included.
func TestAssemblerResume(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	b := MinChunkSize
	data := randBytes(6, 1100*b-3) // depth 2
	for _, enc := range []bool{false, true} {
		l, s := share(t, data, "resume.bin", "", b, enc)
		dir := t.TempDir()
		a, err := NewAssembler(dir, l, s.chunks[l.ID], AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		added := 0
		for round := 0; round < 3; round++ {
			for _, id := range a.Needed() {
				if rng.IntN(2) == 0 {
					if err := a.Add(id, s.chunks[id]); err != nil {
						t.Fatal(err)
					}
					added++
				}
			}
		}
		held, total := a.Progress()
		before := len(a.Needed())
		if held == 0 || held == total {
			t.Fatalf("test needs a partial download, held %d of %d", held, total)
		}
		a.Close()
		// Corrupt data slot of the first held chunk.
		victim := -1
		for i := range total {
			if a.held(ref{idx: uint32(i)}) {
				victim = i
				break
			}
		}
		part := filepath.Join(dir, "resume.bin"+PartSuffix)
		f, err := os.OpenFile(part, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte{0xff, 0xfe}, int64(victim*b+5))
		f.Close()

		a2, err := NewAssembler(dir, l, s.chunks[l.ID], AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		held2, _ := a2.Progress()
		if held2 != held-1 {
			t.Fatalf("after restart %d chunks verify, want %d", held2, held-1)
		}
		if a2.held(ref{idx: uint32(victim)}) {
			t.Fatal("corrupted slot accepted")
		}
		if n := len(a2.Needed()); n != before+1 {
			t.Fatalf("Needed after restart %d, before %d", n, before)
		}
		p := fetchAll(t, a2, s, rng)
		if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
			t.Fatalf("resumed download (encrypt=%v) differs", enc)
		}
	}
}

// Needed lists manifest nodes before data, and data ids of a level only
// once the node listing them has arrived.
func TestNeededOrder(t *testing.T) {
	b := MinChunkSize
	l, s := share(t, randBytes(7, 1100*b), "x", "", b, false)
	a, err := NewAssembler(t.TempDir(), l, s.chunks[l.ID], AssembleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	need := a.Needed()
	for _, id := range need {
		if !IsManifest(s.chunks[id]) {
			t.Fatal("a data chunk is needed before its node arrived")
		}
	}
	a.Add(need[0], s.chunks[need[0]])
	need = a.Needed()
	sawData := false
	for _, id := range need {
		isM := IsManifest(s.chunks[id])
		if isM && sawData {
			t.Fatal("a manifest node listed after data")
		}
		sawData = sawData || !isM
	}
}

// Hostile names: a manifest can carry only a safe name, and the output
// stays in the chosen directory whatever the caller passes.
func TestHostileNames(t *testing.T) {
	for _, name := range []string{"../../etc/passwd", "/abs", ".hidden", "..", "a\x00b", `..\..\x`, "con"} {
		l, s := share(t, []byte("payload"), name, "", MinChunkSize, false)
		m := rootManifest(t, s, l)
		if m.Name != SanitizeName(name) {
			t.Fatalf("manifest name %q for %q", m.Name, name)
		}
		dir := t.TempDir()
		a, err := NewAssembler(dir, l, s.chunks[l.ID], AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := fetchAll(t, a, s, rand.New(rand.NewPCG(1, 1)))
		if filepath.Dir(p) != dir || strings.HasPrefix(filepath.Base(p), ".") {
			t.Fatalf("name %q landed at %q", name, p)
		}
		a2, err := NewAssembler(t.TempDir(), l, s.chunks[l.ID], AssembleOptions{Name: "../" + name})
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(a2.Path()) != SanitizeName("../"+name) {
			t.Fatalf("override name %q gave %q", "../"+name, a2.Path())
		}
		a2.Close()
	}
	// A hand-made manifest with a hostile name is refused, not followed.
	m := &Manifest{Root: true, ChunkSize: MinChunkSize, Name: "../x", MediaType: DefaultMediaType}
	if _, err := m.Encode(); !errors.Is(err, ErrBadManifest) {
		t.Fatalf("Encode with name ../x: %v", err)
	}
	// The real name of an encrypted file is hidden and sanitised too.
	l, s := share(t, []byte("secret"), "../s.txt", "text/plain", MinChunkSize, true)
	if bytes.Contains(s.chunks[l.ID], []byte("s.txt")) {
		t.Fatal("encrypted root shows the real name")
	}
	a, err := NewAssembler(t.TempDir(), l, s.chunks[l.ID], AssembleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Name() != "_s.txt" || a.MediaType() != "text/plain" {
		t.Fatalf("decrypted metadata %q %q", a.Name(), a.MediaType())
	}
}

// Chunks arrive from several goroutines at once, as from several rounds'
// answers; run with -race.
func TestAssemblerConcurrentAdd(t *testing.T) {
	b := MinChunkSize
	data := randBytes(8, 1100*b)
	l, s := share(t, data, "c", "", b, true)
	a, err := NewAssembler(t.TempDir(), l, s.chunks[l.ID], AssembleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		need := a.Needed()
		if len(need) == 0 {
			break
		}
		done := make(chan error, 4)
		for w := range 4 {
			go func() {
				for i := w; i < len(need); i += 4 {
					if err := a.Add(need[i], s.chunks[need[i]]); err != nil {
						done <- err
						return
					}
					a.Progress()
				}
				done <- nil
			}()
		}
		for range 4 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	p, err := a.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatal("concurrently assembled file differs")
	}
}
