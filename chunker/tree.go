package chunker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// A shared folder is one file: a tree archive (docs/proto-chunker.md,
// "Folders"), shared under the folder's name and TreeSuffix with media
// type TreeMediaType. Its header lists every entry before any content, so
// that a reader checks the whole tree (paths, counts, sizes) before it
// writes anything. Manifests and links are those of any file.

// TreeSuffix ends the shared name of a folder's archive.
const TreeSuffix = ".rtree"

// TreeMediaType is the media type of a folder's archive.
const TreeMediaType = "application/vnd.riffle.tree"

// treeMagic begins a tree archive: a high first byte, then "RIFFLET".
var treeMagic = [8]byte{0x89, 'R', 'I', 'F', 'F', 'L', 'E', 'T'}

// TreeVersion is the archive's version byte after the magic.
const TreeVersion = 1

// Bounds of a tree archive, checked when it is made and when it is read.
const (
	MaxTreeEntries   = 1 << 16 // files and folders
	MaxTreeDepth     = 32      // path components
	MaxTreePath      = 4096    // bytes of one path
	MaxTreePathBytes = 8 << 20 // bytes of all paths together
	MaxTreeSize      = 1 << 40 // bytes of all files together
)

// Entry kinds.
const (
	treeDir  = 1
	treeFile = 2
)

// TreeEntry is one entry of a tree: a folder or a regular file, by its
// path relative to the tree's root ('/'-separated, every component a
// SanitizeName fixed point).
type TreeEntry struct {
	Path string
	Dir  bool
	Size int64 // files only
	src  string
}

// Tree is a folder as it is shared: its entries in byte order of their
// paths (every folder before what it holds), and what was left out.
type Tree struct {
	Entries []TreeEntry
	// Skipped names, relative to the root, the symbolic links and special
	// files (devices, sockets, pipes) left out: a link is never followed.
	Skipped []string
	root    string
}

// ErrBadTree is wrapped by every error reading a tree archive.
var ErrBadTree = errors.New("riffle: bad folder archive")

// WalkTree reads the folder dir as it would be shared: folders and
// regular files, names cleaned as SanitizeName cleans a file's name,
// symbolic links and special files skipped (listed in Skipped), never
// followed. It refuses a tree past the bounds, and two names that clean
// to the same path.
func WalkTree(dir string) (*Tree, error) {
	t := &Tree{root: dir}
	// The folder named may itself be a link (the user chose it); nothing
	// below it is followed.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var pathBytes int
	var size int64
	from := map[string]string{} // cleaned path → the path on disk
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) > MaxTreeDepth {
			return fmt.Errorf("%s: more than %d folders deep", rel, MaxTreeDepth)
		}
		for i, s := range parts {
			parts[i] = SanitizeName(s)
		}
		clean := strings.Join(parts, "/")
		var e TreeEntry
		switch {
		case d.IsDir():
			e = TreeEntry{Path: clean, Dir: true}
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			e = TreeEntry{Path: clean, Size: info.Size(), src: p}
			size += info.Size()
		default:
			t.Skipped = append(t.Skipped, rel)
			return nil
		}
		if prev, dup := from[strings.ToLower(clean)]; dup {
			return fmt.Errorf("%s and %s would both be shared as %s (names are cleaned as a file's name is); rename one", prev, rel, clean)
		}
		from[strings.ToLower(clean)] = rel
		pathBytes += len(clean)
		switch {
		case len(clean) > MaxTreePath:
			return fmt.Errorf("%s: path longer than %d bytes", rel, MaxTreePath)
		case len(t.Entries) == MaxTreeEntries:
			return fmt.Errorf("more than %d files and folders", MaxTreeEntries)
		case pathBytes > MaxTreePathBytes:
			return fmt.Errorf("paths longer than %d bytes together", MaxTreePathBytes)
		case size > MaxTreeSize:
			return fmt.Errorf("more than %d bytes", int64(MaxTreeSize))
		}
		t.Entries = append(t.Entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("riffle: folder %s: %w", dir, err)
	}
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Path < t.Entries[j].Path })
	return t, nil
}

// header encodes the tree's header: magic ‖ version ‖ u32 count ‖ count ×
// (u8 kind ‖ u16 path length ‖ path ‖ [u64 size, files only]).
func (t *Tree) header() []byte {
	b := append(treeMagic[:], TreeVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.Entries)))
	for _, e := range t.Entries {
		kind := byte(treeFile)
		if e.Dir {
			kind = treeDir
		}
		b = append(b, kind)
		b = binary.BigEndian.AppendUint16(b, uint16(len(e.Path)))
		b = append(b, e.Path...)
		if !e.Dir {
			b = binary.BigEndian.AppendUint64(b, uint64(e.Size))
		}
	}
	return b
}

// WriteTo writes the archive: the header, then every file's bytes in
// entry order. A file that is no longer a regular file of the size walked
// fails the write: the header already promised its size.
func (t *Tree) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(t.header())
	total := int64(n)
	if err != nil {
		return total, err
	}
	for _, e := range t.Entries {
		if e.Dir {
			continue
		}
		m, err := copyFile(w, e.src, e.Size)
		total += m
		if err != nil {
			return total, fmt.Errorf("riffle: folder %s: %s: %w", t.root, e.Path, err)
		}
	}
	return total, nil
}

// copyFile writes exactly size bytes of the regular file at p to w,
// without following a symbolic link put in its place.
func copyFile(w io.Writer, p string, size int64) (int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() != size {
		return 0, errors.New("changed while being shared (run share again)")
	}
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err == nil && n != size {
		err = errors.New("changed while being shared (run share again)")
	}
	return n, err
}

// Reader returns the archive as a stream (written by a goroutine); close
// it to stop that goroutine early.
func (t *Tree) Reader() io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 64<<10)
		_, err := t.WriteTo(bw)
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// ReadTreeHeader reads and checks a tree archive's header: magic and
// version; at most MaxTreeEntries entries; every path non-empty, at most
// MaxTreePath bytes and MaxTreeDepth components, each component a
// SanitizeName fixed point (so never "", ".", "..", hidden, with a slash,
// backslash, NUL or other control character); paths in strictly
// increasing byte order (no duplicates) and none equal to another's under
// case folding; every path's parent a folder listed before it; sizes
// within MaxTreeSize together.
func ReadTreeHeader(r io.Reader) ([]TreeEntry, error) {
	var fixed [13]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrBadTree, err)
	}
	if [8]byte(fixed[:8]) != treeMagic {
		return nil, fmt.Errorf("%w: not a folder archive", ErrBadTree)
	}
	if fixed[8] != TreeVersion {
		return nil, fmt.Errorf("%w: version %d (this build reads %d)", ErrBadTree, fixed[8], TreeVersion)
	}
	n := binary.BigEndian.Uint32(fixed[9:])
	if n > MaxTreeEntries {
		return nil, fmt.Errorf("%w: %d entries, at most %d", ErrBadTree, n, MaxTreeEntries)
	}
	var (
		out       []TreeEntry
		dirs      = map[string]bool{}
		folded    = map[string]bool{}
		pathBytes int
		size      int64
		buf       [8]byte
	)
	for i := range int(n) {
		if _, err := io.ReadFull(r, buf[:3]); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrBadTree, i, err)
		}
		kind, plen := buf[0], int(binary.BigEndian.Uint16(buf[1:3]))
		if kind != treeDir && kind != treeFile {
			return nil, fmt.Errorf("%w: entry %d: kind %d", ErrBadTree, i, kind)
		}
		if plen == 0 || plen > MaxTreePath {
			return nil, fmt.Errorf("%w: entry %d: path of %d bytes", ErrBadTree, i, plen)
		}
		if pathBytes += plen; pathBytes > MaxTreePathBytes {
			return nil, fmt.Errorf("%w: paths longer than %d bytes together", ErrBadTree, MaxTreePathBytes)
		}
		pb := make([]byte, plen)
		if _, err := io.ReadFull(r, pb); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrBadTree, i, err)
		}
		p := string(pb)
		if err := checkTreePath(p); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrBadTree, i, err)
		}
		if len(out) > 0 && p <= out[len(out)-1].Path {
			return nil, fmt.Errorf("%w: entry %d: %q out of order or repeated", ErrBadTree, i, p)
		}
		if folded[strings.ToLower(p)] {
			return nil, fmt.Errorf("%w: entry %d: %q differs from another path only in case", ErrBadTree, i, p)
		}
		folded[strings.ToLower(p)] = true
		if parent := path.Dir(p); parent != "." && !dirs[parent] {
			return nil, fmt.Errorf("%w: entry %d: %q is not in a folder listed before it", ErrBadTree, i, p)
		}
		e := TreeEntry{Path: p, Dir: kind == treeDir}
		if e.Dir {
			dirs[p] = true
		} else {
			if _, err := io.ReadFull(r, buf[:]); err != nil {
				return nil, fmt.Errorf("%w: entry %d: %v", ErrBadTree, i, err)
			}
			s := binary.BigEndian.Uint64(buf[:])
			if s > MaxTreeSize || size+int64(s) > MaxTreeSize {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrBadTree, int64(MaxTreeSize))
			}
			e.Size = int64(s)
			size += e.Size
		}
		out = append(out, e)
	}
	return out, nil
}

// checkTreePath checks one path of a tree archive.
func checkTreePath(p string) error {
	parts := strings.Split(p, "/")
	if len(parts) > MaxTreeDepth {
		return fmt.Errorf("%q: more than %d components", p, MaxTreeDepth)
	}
	for _, s := range parts {
		if s == "" || SanitizeName(s) != s {
			return fmt.Errorf("%q: unsafe component %q", p, s)
		}
	}
	return nil
}

// IsTree reports whether the file at p begins like a tree archive.
func IsTree(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [9]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && [8]byte(b[:8]) == treeMagic
}

// UnpackTree writes the tree archive r into dir, an empty folder: every
// entry through an os.Root of dir (nothing can land outside it), files
// created new (O_EXCL) with mode perm, folders with 0777 less the umask.
// The whole header is checked before anything is written, and bytes after
// the last file are refused.
func UnpackTree(r io.Reader, dir string, perm os.FileMode) error {
	entries, err := ReadTreeHeader(r)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, e := range entries {
		if e.Dir {
			if err := root.Mkdir(e.Path, 0o777); err != nil {
				return fmt.Errorf("riffle: unpack folder: %w", err)
			}
			continue
		}
		f, err := root.OpenFile(e.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return fmt.Errorf("riffle: unpack folder: %w", err)
		}
		n, err := io.Copy(f, io.LimitReader(r, e.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && n != e.Size {
			err = fmt.Errorf("%w: %s: %d of %d bytes", ErrBadTree, e.Path, n, e.Size)
		}
		if err != nil {
			return fmt.Errorf("riffle: unpack folder: %w", err)
		}
	}
	var one [1]byte
	if _, err := io.ReadFull(r, one[:]); err == nil {
		return fmt.Errorf("%w: bytes after the last file", ErrBadTree)
	}
	return nil
}

// TreeDigest writes the archive that the folder dir would be shared as
// into w (a hash, to compare a folder with the archive it came from).
func TreeDigest(dir string, w io.Writer) error {
	t, err := WalkTree(dir)
	if err != nil {
		return err
	}
	if len(t.Skipped) > 0 {
		return fmt.Errorf("riffle: folder %s holds links or special files", dir)
	}
	_, err = t.WriteTo(w)
	return err
}

// encodeTreeHeader is the header of entries (tests and fuzzing).
func encodeTreeHeader(entries []TreeEntry) []byte {
	return (&Tree{Entries: entries}).header()
}

// OpenShare opens what sharing the path p shares: a regular file as
// itself under its base name, a folder as its tree archive under its
// cleaned name and TreeSuffix, with the names of the links and special
// files left out. Anything else is refused.
func OpenShare(p string) (r io.ReadCloser, name string, skipped []string, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, "", nil, err
	}
	switch {
	case st.Mode().IsRegular():
		f, err := os.Open(p)
		if err != nil {
			return nil, "", nil, err
		}
		return f, filepath.Base(p), nil, nil
	case st.IsDir():
		t, err := WalkTree(p)
		if err != nil {
			return nil, "", nil, err
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, "", nil, err
		}
		return t.Reader(), TreeName(filepath.Base(abs)), t.Skipped, nil
	}
	return nil, "", nil, fmt.Errorf("%s is neither a regular file nor a folder", p)
}

// TreeName is the shared name of a folder's archive: the folder's name,
// cleaned, and TreeSuffix.
func TreeName(folder string) string {
	return SanitizeName(truncateUTF8(SanitizeName(folder), MaxNameBytes-len(TreeSuffix)) + TreeSuffix)
}
