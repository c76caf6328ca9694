package chunker

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// writeTree makes files (path → content; a path ending in / is a folder).
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func archive(t *testing.T, dir string) (*Tree, []byte) {
	t.Helper()
	tr, err := WalkTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := tr.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return tr, b.Bytes()
}

// A folder round-trips through its archive, byte for byte: nested files,
// an empty file, an empty folder; links and special files are skipped and
// named, never followed.
func TestTreeRoundTrip(t *testing.T) {
	src := t.TempDir()
	outside := t.TempDir()
	writeTree(t, src, map[string]string{
		"a.txt": "alpha", "empty.bin": "", "sub/b.txt": "beta", "sub/deeper/c.txt": strings.Repeat("c", 10000),
		"sub/nothing/": "", "z/": "",
	})
	writeTree(t, outside, map[string]string{"secret.txt": "not to be shared"})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(src, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(src, "sub", "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, arc := archive(t, src)
	var paths []string
	for _, e := range tr.Entries {
		paths = append(paths, e.Path)
	}
	want := []string{"a.txt", "empty.bin", "sub", "sub/b.txt", "sub/deeper", "sub/deeper/c.txt", "sub/nothing", "z"}
	if !slices.Equal(paths, want) {
		t.Fatalf("entries %q, want %q", paths, want)
	}
	slices.Sort(tr.Skipped)
	if !slices.Equal(tr.Skipped, []string{"fifo", "link.txt", "sub/dirlink"}) {
		t.Fatalf("skipped %q", tr.Skipped)
	}
	if bytes.Contains(arc, []byte("not to be shared")) {
		t.Fatal("the archive holds a file a link pointed to")
	}
	dst := t.TempDir()
	if err := UnpackTree(bytes.NewReader(arc), dst, 0o640); err != nil {
		t.Fatal(err)
	}
	for p, content := range map[string]string{"a.txt": "alpha", "empty.bin": "", "sub/b.txt": "beta", "sub/deeper/c.txt": strings.Repeat("c", 10000)} {
		b, err := os.ReadFile(filepath.Join(dst, p))
		if err != nil || string(b) != content {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	for _, d := range []string{"sub/nothing", "z"} {
		if st, err := os.Stat(filepath.Join(dst, d)); err != nil || !st.IsDir() {
			t.Errorf("empty folder %s: %v", d, err)
		}
	}
	// The unpacked folder is shared as the same archive.
	h1, h2 := sha256.New(), sha256.New()
	h1.Write(arc)
	if err := TreeDigest(dst, h2); err != nil || !bytes.Equal(h1.Sum(nil), h2.Sum(nil)) {
		t.Fatalf("digest of the unpacked folder: %v, differs from its archive", err)
	}
	// Into a folder that is not empty: nothing is overwritten.
	if err := UnpackTree(bytes.NewReader(arc), dst, 0o640); err == nil {
		t.Fatal("unpacked over an existing tree")
	}
	// The archive is a file like any other for Share.
	s := newStore()
	link, err := Share(bytes.NewReader(arc), "src"+TreeSuffix, TreeMediaType, MinChunkSize, ShareOptions{}, s.emit)
	if err != nil || NormalizeMediaType(TreeMediaType) != TreeMediaType {
		t.Fatal(err)
	}
	m, err := DecodeManifest(s.chunks[link.ID])
	if err != nil || m.Name != "src.rtree" || m.MediaType != TreeMediaType {
		t.Fatalf("root manifest of a folder: %+v, %v", m, err)
	}
}

// A folder whose names clean to one path, or past the bounds, is refused
// before anything is shared.
func TestWalkTreeRefuses(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a:b": "1", "a_b": "2"})
	if _, err := WalkTree(dir); err == nil || !strings.Contains(err.Error(), "would both be shared as a_b") {
		t.Errorf("names cleaning to one path: %v", err)
	}
	dir = t.TempDir()
	writeTree(t, dir, map[string]string{"Read.me": "1", "READ.ME": "2"})
	if _, err := WalkTree(dir); err == nil || !strings.Contains(err.Error(), "would both be shared") {
		t.Errorf("names differing in case: %v", err)
	}
	dir = t.TempDir()
	writeTree(t, dir, map[string]string{strings.Repeat("d/", MaxTreeDepth) + "f": "deep"})
	if _, err := WalkTree(dir); err == nil || !strings.Contains(err.Error(), "folders deep") {
		t.Errorf("a tree too deep: %v", err)
	}
	// Hidden names are cleaned as a file's name is.
	dir = t.TempDir()
	writeTree(t, dir, map[string]string{".env": "x"})
	if tr, err := WalkTree(dir); err != nil || tr.Entries[0].Path != "env" {
		t.Errorf("hidden name: %+v, %v", tr, err)
	}
}

// treeHeader encodes raw entries (kind, path, size) without any check.
func treeHeader(count int, entries ...any) []byte {
	b := append(treeMagic[:], TreeVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(count))
	for i := 0; i < len(entries); i += 2 {
		p := entries[i].(string)
		size, dir := entries[i+1].(int), entries[i+1].(int) < 0
		kind := byte(treeFile)
		if dir {
			kind = treeDir
		}
		b = append(b, kind)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
		if !dir {
			b = binary.BigEndian.AppendUint64(b, uint64(size))
		}
	}
	return b
}

// pairs is treeHeader with the count of its entries (dir: size -1).
func pairs(entries ...any) []byte { return treeHeader(len(entries)/2, entries...) }

// The decoder refuses every hostile archive before writing anything, and
// nothing lands outside the folder.
func TestTreeHostileRefused(t *testing.T) {
	long := strings.Repeat("x", 200) + "/"
	for name, arc := range map[string][]byte{
		"dot-dot":          pairs("..", -1),
		"dot-dot inside":   pairs("a", -1, "a/../../x", 1),
		"absolute":         pairs("/etc", -1),
		"empty component":  pairs("a", -1, "a//b", 1),
		"dot":              pairs(".", -1),
		"dot component":    pairs("a", -1, "a/./b", 1),
		"NUL":              pairs("a\x00b", 1),
		"control":          pairs("a\nb", 1),
		"backslash":        pairs("..\\x", 1),
		"hidden":           pairs(".bashrc", 1),
		"trailing slash":   pairs("a/", -1),
		"device name":      pairs("CON", 1),
		"duplicate":        pairs("a", 1, "a", 1),
		"out of order":     pairs("b", 1, "a", 1),
		"case":             pairs("A", 1, "a", 1),
		"parent missing":   pairs("a/b", 1),
		"parent is a file": pairs("a", 1, "a/b", 1),
		"too deep":         pairs(strings.TrimSuffix(strings.Repeat("d/", MaxTreeDepth+1), "/"), -1),
		"path too long":    pairs(strings.Repeat(long, 21), 1),
		"empty path":       pairs("", 1),
		"bad kind":         append(treeHeader(1), 7, 0, 1, 'a'),
		"too many":         treeHeader(MaxTreeEntries + 1),
		"too large":        pairs("a", MaxTreeSize, "b", 1),
		"huge size":        append(treeHeader(1), 2, 0, 1, 'a', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"truncated":        pairs("a", 1)[:20],
		"bad magic":        append([]byte("RIFFLET!"), pairs("a", 0)[8:]...),
		"version 2":        append(append(treeMagic[:], 2), pairs("a", 0)[9:]...),
		"short content":    append(pairs("a", 5), "abc"...),
		"trailing bytes":   append(pairs("a", 1), "xy"...),
	} {
		dir := t.TempDir()
		parent := filepath.Dir(dir)
		before, _ := os.ReadDir(parent)
		err := UnpackTree(bytes.NewReader(arc), dir, 0o600)
		if err == nil {
			t.Errorf("%s: unpacked", name)
			continue
		}
		if !errors.Is(err, ErrBadTree) {
			t.Errorf("%s: %v, not ErrBadTree", name, err)
		}
		if name != "short content" && name != "trailing bytes" {
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Errorf("%s: wrote %d entries before refusing", name, len(ents))
			}
		}
		if after, _ := os.ReadDir(parent); len(after) != len(before) {
			t.Errorf("%s: wrote outside the folder", name)
		}
	}
}

// The header's bytes, pinned (docs/proto-chunker.md, "Folders").
func TestTreeVector(t *testing.T) {
	got := hex.EncodeToString(encodeTreeHeader([]TreeEntry{{Path: "a.txt", Size: 5}, {Path: "d", Dir: true}, {Path: "d/e", Size: 0}}))
	const want = "89524946464c45540100000003" + "020005612e7478740000000000000005" + "01000164" + "020003642f650000000000000000"
	if got != want {
		t.Fatalf("header %s, want %s", got, want)
	}
	entries, err := ReadTreeHeader(bytes.NewReader(mustHex(want)))
	if err != nil || len(entries) != 3 || entries[1].Path != "d" || !entries[1].Dir || entries[0].Size != 5 {
		t.Fatalf("decoded %+v, %v", entries, err)
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzReadTreeHeader: whatever header decodes encodes to the bytes read,
// and every path it holds is safe.
func FuzzReadTreeHeader(f *testing.F) {
	f.Add(pairs("a.txt", 5, "d", -1, "d/e", 0))
	f.Add(pairs("..", -1))
	f.Add(pairs("a", -1, "a/b", 1, "a/c", -1, "a/c/d", 3))
	f.Add(treeHeader(0))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		entries, err := ReadTreeHeader(r)
		if err != nil {
			return
		}
		read := in[:len(in)-r.Len()]
		if !bytes.Equal(encodeTreeHeader(entries), read) {
			t.Fatalf("decode→encode changed the header")
		}
		for _, e := range entries {
			if !filepath.IsLocal(e.Path) || checkTreePath(e.Path) != nil {
				t.Fatalf("unsafe path %q taken", e.Path)
			}
		}
	})
}
