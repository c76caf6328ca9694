package chunker

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// PartSuffix and tmpSuffix name the working files next to the output: the
// partial file holds received chunks at their slots across restarts; the
// temporary file receives the decrypted file of a private share.
const (
	PartSuffix = ".riffle-part"
	tmpSuffix  = ".riffle-tmp"
)

// ErrNotNeeded is wrapped by Add for a chunk whose id the file does not
// (yet) list: the caller may drop it.
var ErrNotNeeded = errors.New("riffle: chunk not part of this file")

// ErrIncomplete is wrapped by Finish while chunks are missing.
var ErrIncomplete = errors.New("riffle: file incomplete")

// ErrCorrupt is wrapped when a chunk's bytes do not hash to its id or have
// a length the manifest does not allow.
var ErrCorrupt = errors.New("riffle: corrupt chunk")

// AssembleOptions are the options of NewAssembler.
type AssembleOptions struct {
	// Name replaces the manifest's name for the output file; it is
	// sanitised like any name.
	Name string
	// Overwrite lets Finish replace an existing file of the same name;
	// otherwise Finish fails with an error wrapping fs.ErrExist.
	Overwrite bool
	// Log receives progress at debug level; nil is quiet.
	Log *slog.Logger
}

// ref names one position of a manifest tree: level 0 holds data chunk
// indexes, level ℓ ≥ 1 nodes of level ℓ.
type ref struct {
	level uint8
	idx   uint32
}

// Assembler rebuilds one file from its chunks, taken in any order. Chunks
// are written to a partial file at fixed slots (slot·b: data chunk i at
// slot i, then the manifest nodes level by level), which a later Assembler
// for the same output re-verifies, so a download resumes after a restart.
// Its methods are safe for concurrent use.
type Assembler struct {
	mu   sync.Mutex
	log  *slog.Logger
	link Link
	root *Manifest
	fc   *fileCipher // nil for an unencrypted file

	name, mediaType string // real (decrypted) name and media type
	final, part     string
	overwrite       bool
	f               *os.File

	b      int
	capN   int     // ids per node
	levels []int   // c_0..c_depth: items per level
	base   []int64 // slot of item 0 of each level
	pages  [][][]ID
	have   [][]uint64 // bit per item per level
	first  map[ID]ref
	dups   map[ID][]ref // further positions of ids that occur more than once
	// missing counts known and unknown items not yet held; done is set
	// once Finish succeeded.
	missing  int
	heldData int
	done     bool
}

// NewAssembler prepares to download the file of link into dir. root is the
// root manifest chunk (its id must be link.ID). If a partial file of an
// earlier attempt exists, every chunk in it is verified and kept.
func NewAssembler(dir string, link Link, root []byte, opts AssembleOptions) (*Assembler, error) {
	if got := Sum(root); got != link.ID {
		return nil, fmt.Errorf("%w: root manifest hashes to %s, link names %s", ErrCorrupt, got, link.ID)
	}
	m, err := DecodeManifest(root)
	if err != nil {
		return nil, err
	}
	var fc *fileCipher
	if m.Opaque {
		// A private file's root: only the link's key opens it.
		if link.Key == nil {
			return nil, fmt.Errorf("%w: file %s is encrypted and the link carries no key", ErrBadLink, link.ID)
		}
		if fc, err = newFileCipher(link.Key); err != nil {
			return nil, fmt.Errorf("riffle: assemble %s: %w", link.ID, err)
		}
		if m, err = fc.openManifest(root, 0, 0); err != nil {
			return nil, fmt.Errorf("riffle: assemble %s: %w", link.ID, err)
		}
	}
	if !m.Root {
		return nil, fmt.Errorf("%w: link %s names a continuation node, not a root", ErrBadManifest, link.ID)
	}
	a := &Assembler{log: opts.Log, link: link, root: m, b: m.ChunkSize, overwrite: opts.Overwrite,
		name: m.Name, mediaType: m.MediaType, first: make(map[ID]ref), dups: make(map[ID][]ref)}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case m.Scheme == SchemeStream && link.Key == nil:
		return nil, fmt.Errorf("%w: file %s is encrypted and the link carries no key", ErrBadLink, link.ID)
	case m.Scheme == SchemeNone && link.Key != nil:
		return nil, fmt.Errorf("%w: link carries a key but file %s is not encrypted", ErrBadLink, link.ID)
	case m.Scheme == SchemeStream:
		a.fc = fc
		if a.name, a.mediaType, err = a.fc.openMeta(m); err != nil {
			return nil, fmt.Errorf("riffle: assemble %s: %w", link.ID, err)
		}
	}
	name := a.name
	if opts.Name != "" {
		name = opts.Name
	}
	name = SanitizeName(name) // already safe unless from opts; never trust one check
	cleanDir := filepath.Clean(dir)
	a.final = filepath.Join(cleanDir, name)
	if filepath.Dir(a.final) != cleanDir {
		return nil, fmt.Errorf("riffle: assemble: name %q leaves directory %q", name, dir)
	}
	a.part = filepath.Join(cleanDir, truncateUTF8(name, MaxNameBytes-len(PartSuffix))+PartSuffix)

	a.capN = nodeCap(a.b, m.Sealed)
	a.levels, err = treeLevels(m.NumChunks, a.capN, rootCap(a.b, m.Sealed, m.Name, m.MediaType, len(m.SealedMeta)))
	if err != nil {
		return nil, err
	}
	depth := len(a.levels) - 1
	a.base = make([]int64, depth+1)
	a.pages = make([][][]ID, depth+1)
	a.have = make([][]uint64, depth+1)
	next := int64(m.NumChunks)
	for l := range a.levels {
		a.missing += a.levels[l]
		a.have[l] = make([]uint64, (a.levels[l]+63)/64)
		if l > 0 {
			a.base[l] = next
			next += int64(a.levels[l])
		}
		if l < depth {
			a.pages[l] = make([][]ID, (a.levels[l]+a.capN-1)/a.capN)
		}
	}
	a.pages[depth] = [][]ID{m.ids()}
	a.register(depth, 0, m.ids())

	if a.f, err = os.OpenFile(a.part, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("riffle: assemble: open partial file: %w", err)
	}
	if err := a.resume(); err != nil {
		a.f.Close()
		return nil, err
	}
	a.log.Debug("assembler ready", "file", link.ID.String(), "chunks", m.NumChunks,
		"depth", depth, "missing", a.missing, "part", a.part)
	return a, nil
}

// register records the ids of one page: the children of one node, or the
// root's list, starting at index start of level l.
func (a *Assembler) register(l, start int, ids []ID) {
	for k, id := range ids {
		r := ref{level: uint8(l), idx: uint32(start + k)}
		if _, ok := a.first[id]; ok {
			a.dups[id] = append(a.dups[id], r)
		} else {
			a.first[id] = r
		}
	}
}

func (a *Assembler) refs(id ID) []ref {
	r, ok := a.first[id]
	if !ok {
		return nil
	}
	return append([]ref{r}, a.dups[id]...)
}

func (a *Assembler) held(r ref) bool {
	return a.have[r.level][r.idx/64]&(1<<(r.idx%64)) != 0
}

func (a *Assembler) setHeld(r ref) {
	a.have[r.level][r.idx/64] |= 1 << (r.idx % 64)
	a.missing--
	if r.level == 0 {
		a.heldData++
	}
}

// idAt returns the id at a position, if its parent has arrived.
func (a *Assembler) idAt(l, i int) (ID, bool) {
	if l == len(a.levels)-1 {
		return a.pages[l][0][i], true
	}
	p := a.pages[l][i/a.capN]
	if p == nil {
		return ID{}, false
	}
	return p[i%a.capN], true
}

// itemLen is the exact length of the chunk at a position.
func (a *Assembler) itemLen(r ref) int {
	if r.level == 0 {
		if int(r.idx) == a.root.NumChunks-1 {
			return int(a.root.Size - int64(a.root.NumChunks-1)*int64(a.b))
		}
		return a.b
	}
	if a.root.Sealed {
		return a.b // padded to a whole chunk
	}
	below := a.levels[r.level-1]
	return nodeHeaderSize + IDSize*min(a.capN, below-int(r.idx)*a.capN)
}

func (a *Assembler) offset(r ref) int64 { return (a.base[r.level] + int64(r.idx)) * int64(a.b) }

func (r ref) String() string {
	if r.level == 0 {
		return fmt.Sprintf("data chunk %d", r.idx)
	}
	return fmt.Sprintf("manifest node %d of level %d", r.idx, r.level)
}

// accept checks chunk (already known to hash to its id) for position r,
// stores it and, for a node, registers its children.
func (a *Assembler) accept(r ref, chunk []byte, write bool) error {
	if n := a.itemLen(r); len(chunk) != n {
		return fmt.Errorf("%w: %s has %d bytes, the manifest implies %d", ErrCorrupt, r, len(chunk), n)
	}
	var node *Manifest
	if r.level > 0 {
		var err error
		if a.fc != nil {
			node, err = a.fc.openManifest(chunk, int(r.level), int(r.idx))
		} else {
			node, err = DecodeManifest(chunk)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		// itemLen already fixed the id count; the level and chunk size
		// must match the position too.
		if node.Root || node.Level != int(r.level) || node.ChunkSize != a.b {
			return fmt.Errorf("%w: %s is a %s", ErrBadManifest, r, describe(node))
		}
	}
	if write {
		if _, err := a.f.WriteAt(chunk, a.offset(r)); err != nil {
			return fmt.Errorf("riffle: assemble: write %s: %w", r, err)
		}
	}
	if node != nil {
		ids := node.ids()
		a.pages[r.level-1][r.idx] = ids
		a.register(int(r.level)-1, int(r.idx)*a.capN, ids)
	}
	a.setHeld(r)
	return nil
}

func describe(m *Manifest) string {
	if m.Root {
		return "root manifest"
	}
	return fmt.Sprintf("level-%d node of chunk size %d", m.Level, m.ChunkSize)
}

// resume verifies what the partial file holds, top level first, since a
// node's children are known only once the node is.
func (a *Assembler) resume() error {
	st, err := a.f.Stat()
	if err != nil {
		return fmt.Errorf("riffle: assemble: stat partial file: %w", err)
	}
	if st.Size() == 0 {
		return nil
	}
	buf := make([]byte, a.b)
	kept := 0
	for l := len(a.levels) - 1; l >= 0; l-- {
		for i := 0; i < a.levels[l]; i++ {
			r := ref{level: uint8(l), idx: uint32(i)}
			id, known := a.idAt(l, i)
			if !known || a.held(r) {
				continue
			}
			chunk := buf[:a.itemLen(r)]
			off := a.offset(r)
			if off+int64(len(chunk)) > st.Size() {
				continue
			}
			if _, err := a.f.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("riffle: assemble: read %s from partial file: %w", r, err)
			}
			if Sum(chunk) != id {
				continue
			}
			if err := a.accept(r, chunk, false); err != nil {
				return err
			}
			kept++
		}
	}
	a.log.Debug("resumed partial file", "part", a.part, "kept", kept, "missing", a.missing)
	return nil
}

// Needed returns the ids still to fetch that are known so far: missing
// manifest nodes first (top level first), then missing data chunks, each id
// once. It is empty once every chunk is held. Ids of lower levels appear as
// the nodes that list them arrive.
func (a *Assembler) Needed() []ID {
	nodes, data := a.Missing()
	return append(nodes, data...)
}

// Missing is Needed split in two: the missing manifest nodes (top level
// first) and the missing data chunks known so far. A client takes the
// nodes from the public index it synced, never from a PIR answer of the
// epoch (docs/protocol.md §6.4), and requests data chunks only.
func (a *Assembler) Missing() (nodes, data []ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := make(map[ID]bool)
	for l := len(a.levels) - 1; l >= 0; l-- {
		for i := 0; i < a.levels[l]; i++ {
			r := ref{level: uint8(l), idx: uint32(i)}
			if a.held(r) {
				continue
			}
			id, known := a.idAt(l, i)
			if !known {
				i += a.capN - 1 // the whole page is unknown
				continue
			}
			if _, dup := a.dups[id]; dup {
				if seen[id] {
					continue
				}
				seen[id] = true
			}
			if l > 0 {
				nodes = append(nodes, id)
			} else {
				data = append(data, id)
			}
		}
	}
	return nodes, data
}

// Add stores one chunk. It returns an error wrapping ErrCorrupt if the
// bytes do not hash to id or have the wrong length, ErrBadManifest for a
// malformed manifest node, and ErrNotNeeded for an id the file does not
// list (or not yet: its node has not arrived). A chunk already held is
// accepted again without effect.
func (a *Assembler) Add(id ID, chunk []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return fmt.Errorf("riffle: assemble %s: already finished or closed", a.link.ID)
	}
	refs := a.refs(id)
	if len(refs) == 0 {
		return fmt.Errorf("%w: %s", ErrNotNeeded, id)
	}
	if len(chunk) > a.b {
		return fmt.Errorf("%w: %s has %d bytes, chunk size is %d", ErrCorrupt, refs[0], len(chunk), a.b)
	}
	if got := Sum(chunk); got != id {
		return fmt.Errorf("%w: %s (id %s) hashes to %s", ErrCorrupt, refs[0], id, got)
	}
	for _, r := range refs {
		if a.held(r) {
			continue
		}
		if err := a.accept(r, chunk, true); err != nil {
			return err
		}
	}
	return nil
}

// Progress returns how many data chunks are held, of how many.
func (a *Assembler) Progress() (held, total int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.heldData, a.levels[0]
}

// Manifest returns the decoded root manifest.
func (a *Assembler) Manifest() *Manifest { return a.root }

// Name and MediaType return the file's real name and media type (decrypted
// for a private share; Name is safe as a file name).
func (a *Assembler) Name() string      { return a.name }
func (a *Assembler) MediaType() string { return a.mediaType }

// Path returns where Finish puts the file.
func (a *Assembler) Path() string { return a.final }

// Close releases the partial file without finishing; a later Assembler for
// the same output resumes from it.
func (a *Assembler) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// Finish checks that every chunk is held, writes the file (decrypting a
// private share and checking every segment), moves it into place and
// removes the partial file. It returns the final path.
func (a *Assembler) Finish() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return a.final, nil
	}
	if a.f == nil {
		return "", fmt.Errorf("riffle: assemble %s: closed", a.link.ID)
	}
	if a.missing > 0 {
		return "", fmt.Errorf("%w: %d of %d chunks missing, first %s", ErrIncomplete, a.missing, a.total(), a.firstMissing())
	}
	if err := a.f.Sync(); err != nil {
		return "", fmt.Errorf("riffle: assemble: sync partial file: %w", err)
	}
	var err error
	if a.fc == nil {
		err = a.finishPlain()
	} else {
		err = a.finishEncrypted()
	}
	if err != nil {
		return "", err
	}
	a.done = true
	a.log.Debug("file assembled", "file", a.link.ID.String(), "path", a.final)
	return a.final, nil
}

func (a *Assembler) total() int {
	t := 0
	for _, c := range a.levels {
		t += c
	}
	return t
}

func (a *Assembler) firstMissing() ref {
	for l := len(a.levels) - 1; l >= 0; l-- {
		for i := 0; i < a.levels[l]; i++ {
			if r := (ref{level: uint8(l), idx: uint32(i)}); !a.held(r) {
				return r
			}
		}
	}
	return ref{}
}

// finishPlain: the data slots are the file; cut the manifest slots off.
func (a *Assembler) finishPlain() error {
	if err := a.f.Truncate(a.root.Size); err != nil {
		return fmt.Errorf("riffle: assemble: truncate partial file to %d bytes: %w", a.root.Size, err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("riffle: assemble: sync: %w", err)
	}
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("riffle: assemble: close: %w", err)
	}
	a.f = nil
	return publish(a.part, a.final, a.overwrite)
}

// finishEncrypted opens every segment into a temporary file, then moves it
// into place. A segment that fails is named by its chunk index.
func (a *Assembler) finishEncrypted() error {
	tmp := filepath.Join(filepath.Dir(a.part), truncateUTF8(filepath.Base(a.final), MaxNameBytes-len(tmpSuffix))+tmpSuffix)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("riffle: assemble: create %s: %w", filepath.Base(tmp), err)
	}
	fail := func(err error) error {
		out.Close()
		os.Remove(tmp)
		return err
	}
	ct := make([]byte, a.b)
	pt := make([]byte, 0, a.b)
	defer clear(pt[:cap(pt)])
	n := a.root.NumChunks
	for i := 0; i < n; i++ {
		r := ref{idx: uint32(i)}
		c := ct[:a.itemLen(r)]
		if _, err := a.f.ReadAt(c, a.offset(r)); err != nil {
			return fail(fmt.Errorf("riffle: assemble: read %s: %w", r, err))
		}
		if pt, err = a.fc.openSegment(pt[:0], c, uint64(i), i == n-1); err != nil {
			return fail(fmt.Errorf("riffle: assemble: %s: %w", r, err))
		}
		if _, err := out.Write(pt); err != nil {
			return fail(fmt.Errorf("riffle: assemble: write plaintext of %s: %w", r, err))
		}
	}
	if err := out.Sync(); err != nil {
		return fail(fmt.Errorf("riffle: assemble: sync: %w", err))
	}
	if err := out.Close(); err != nil {
		return fail(fmt.Errorf("riffle: assemble: close: %w", err))
	}
	if err := publish(tmp, a.final, a.overwrite); err != nil {
		os.Remove(tmp)
		return err
	}
	a.f.Close()
	a.f = nil
	if err := os.Remove(a.part); err != nil {
		return fmt.Errorf("riffle: assemble: remove partial file: %w", err)
	}
	return nil
}

// publish moves src to dst. Without overwrite it hard-links first, which
// fails atomically if dst exists, and falls back to a checked rename where
// links are not supported.
func publish(src, dst string, overwrite bool) error {
	if !overwrite {
		err := os.Link(src, dst)
		switch {
		case err == nil:
			if err := os.Remove(src); err != nil {
				return fmt.Errorf("riffle: assemble: remove %s: %w", filepath.Base(src), err)
			}
			syncDir(filepath.Dir(dst))
			return nil
		case errors.Is(err, fs.ErrExist):
			return fmt.Errorf("riffle: assemble: %s: %w", dst, fs.ErrExist)
		}
		if _, err := os.Lstat(dst); err == nil {
			return fmt.Errorf("riffle: assemble: %s: %w", dst, fs.ErrExist)
		}
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("riffle: assemble: rename into place: %w", err)
	}
	syncDir(filepath.Dir(dst))
	return nil
}

// syncDir makes a rename durable where the platform allows; failure only
// weakens durability, never correctness, so it is ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
