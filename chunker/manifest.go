package chunker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Chunk sizes (§3: the epoch parameter b).
const (
	DefaultChunkSize = 256 << 10 // 256 KiB
	MinChunkSize     = 1 << 10   // 1 KiB: a root manifest with the longest name still fits
	MaxChunkSize     = 4 << 20   // 4 MiB
)

// MaxChunks bounds the data chunks of one file. An Assembler keeps about
// 100 bytes per chunk in memory (the id, its index, a bit), so this caps that
// at about 400 MiB; files reach 1 TiB at the default chunk size, 16 TiB at
// 4 MiB, 4 GiB at 1 KiB.
const MaxChunks = 1 << 22

// MaxDepth bounds the height of a manifest tree. With at least 31 ids per
// node (1 KiB chunks) and MaxChunks chunks no file needs more than 5 levels.
const MaxDepth = 8

// manifestMagic begins every manifest chunk: a high first byte (as in PNG)
// so that no text file starts with it, then "RIFFLEM".
var manifestMagic = [8]byte{0x89, 'R', 'I', 'F', 'F', 'L', 'E', 'M'}

// ManifestVersion is the version byte after the magic.
const ManifestVersion = 1

// Kind bytes after the version.
const (
	kindRoot = 1 // the root: file metadata and the top level of ids
	kindNode = 2 // a continuation: one node of the tree below the root
	// kindSealed: a private file's manifest chunk (root or node alike), its
	// body sealed under the file key (sealed.go).
	kindSealed = 3
)

// Header sizes of the two kinds (docs/proto-chunker.md).
const (
	// magic 8, version 1, kind 1, chunk size 4, size 8, scheme 1, depth 1,
	// chunks 4, name length 2, media type length 2, sealed length 2, count 4
	rootFixedSize = 38
	// magic 8, version 1, kind 1, level 1, chunk size 4, count 4
	nodeHeaderSize = 19
)

// Scheme says how the data chunks encode the file.
type Scheme uint8

const (
	// SchemeNone: the data chunks are the file's bytes.
	SchemeNone Scheme = 0
	// SchemeStream: the data chunks are the file encrypted with
	// AES-256-GCM in the STREAM construction, one segment per chunk.
	SchemeStream Scheme = 1
)

func (s Scheme) String() string {
	switch s {
	case SchemeNone:
		return "none"
	case SchemeStream:
		return "aes256gcm-stream"
	}
	return fmt.Sprintf("scheme(%d)", uint8(s))
}

// Bounds of the sealed metadata of an encrypted file: two u16 lengths and
// the GCM tag at least; the longest name and media type at most.
const (
	minSealedMeta = 4 + tagSize
	maxSealedMeta = 4 + MaxNameBytes + MaxMediaTypeBytes + tagSize
)

// ErrBadManifest is wrapped by every manifest decoding or validation error.
var ErrBadManifest = errors.New("riffle: bad manifest")

// Manifest is one decoded manifest chunk: a root, or a continuation node of
// a manifest tree.
type Manifest struct {
	Root      bool // false for a continuation node
	ChunkSize int  // b: every data chunk but the last has exactly b bytes

	// Root only.
	Name       string // public name, safe: SanitizeName(Name) == Name
	MediaType  string // canonical, see NormalizeMediaType
	Size       int64  // bytes of the data chunks together (ciphertext for SchemeStream)
	Scheme     Scheme
	NumChunks  int    // data chunks of the whole file
	Depth      int    // 0: the root lists the data chunks; d: the root lists nodes of level d
	SealedMeta []byte // SchemeStream: real name and media type, sealed under the file key

	// Sealed: the chunk is a private file's, its body sealed under the file
	// key (SchemeStream roots and the nodes below them). Opaque: decoded
	// without the key, so only ChunkSize is known (what servers see).
	Sealed, Opaque bool

	// Node only: 1 if it lists data chunks, ℓ > 1 if it lists nodes of level ℓ-1.
	Level int

	// Exactly one of these is non-empty (both are empty for an empty file).
	Chunks        []ID // data chunk ids listed in this manifest chunk
	Continuations []ID // manifest node ids listed in this manifest chunk
}

// IsManifest reports whether a chunk begins like a manifest chunk. It is a
// cheap test for indexing; DecodeManifest decides.
func IsManifest(chunk []byte) bool {
	return len(chunk) >= len(manifestMagic)+2 && [8]byte(chunk[:8]) == manifestMagic && chunk[8] == ManifestVersion
}

// room is the most bytes that the cleartext encoding of a manifest chunk
// of chunk size b may take: b, or less the sealing overhead in a sealed
// chunk.
func room(b int, sealed bool) int {
	if sealed {
		return b - sealedOverhead
	}
	return b
}

// nodeCap is the number of ids that fit in one node of chunk size b.
func nodeCap(b int, sealed bool) int { return (room(b, sealed) - nodeHeaderSize) / IDSize }

// rootCap is the number of ids that fit in a root with these metadata.
func rootCap(b int, sealed bool, name, mediaType string, sealedMeta int) int {
	return (room(b, sealed) - rootFixedSize - len(name) - len(mediaType) - sealedMeta) / IDSize
}

// treeLevels returns c_0..c_depth of the canonical manifest tree of n data
// chunks: c_0 = n, and level ℓ packs level ℓ-1 into full nodes of nodeCap
// ids (the last may be partial) until the root can list a level.
func treeLevels(n, nodeCap, rootCap int) ([]int, error) {
	if rootCap < 1 || nodeCap < 2 {
		return nil, fmt.Errorf("%w: %d ids per root and %d per node cannot hold a tree", ErrBadManifest, rootCap, nodeCap)
	}
	c := []int{n}
	for c[len(c)-1] > rootCap {
		if len(c) > MaxDepth {
			return nil, fmt.Errorf("%w: %d chunks need more than %d levels", ErrBadManifest, n, MaxDepth)
		}
		last := c[len(c)-1]
		c = append(c, (last+nodeCap-1)/nodeCap)
	}
	return c, nil
}

// checkChunkSize reports a chunk size outside [MinChunkSize, MaxChunkSize].
func checkChunkSize(b int) error {
	if b < MinChunkSize || b > MaxChunkSize {
		return fmt.Errorf("chunk size %d outside [%d, %d]", b, MinChunkSize, MaxChunkSize)
	}
	return nil
}

// streamBounds checks that size bytes of data chunks make n chunks of b
// bytes under scheme s.
func streamBounds(size int64, n, b int, s Scheme) error {
	if n < 0 || n > MaxChunks {
		return fmt.Errorf("%d chunks, at most %d", n, MaxChunks)
	}
	if size < 0 || size > int64(n)*int64(b) {
		return fmt.Errorf("size %d does not fit in %d chunks of %d bytes", size, n, b)
	}
	switch s {
	case SchemeNone:
		if want := (size + int64(b) - 1) / int64(b); int64(n) != want {
			return fmt.Errorf("size %d in chunks of %d bytes makes %d chunks, manifest says %d", size, b, want, n)
		}
	case SchemeStream:
		// Every segment carries a tag, even the empty last one of an empty
		// file, so the last chunk has at least tagSize bytes.
		if n < 1 || size < int64(n-1)*int64(b)+tagSize {
			return fmt.Errorf("encrypted size %d in %d chunks of %d bytes leaves the last chunk shorter than its %d-byte tag", size, n, b, tagSize)
		}
	default:
		return fmt.Errorf("unknown scheme %d", uint8(s))
	}
	return nil
}

// validate checks every invariant that the encoding promises, so that Encode
// and DecodeManifest accept exactly the same manifests.
func (m *Manifest) validate() error {
	if err := checkChunkSize(m.ChunkSize); err != nil {
		return err
	}
	if m.Opaque {
		if !m.Sealed || m.Root || m.Level != 0 || m.Name != "" || m.MediaType != "" || m.Size != 0 || m.Scheme != 0 ||
			m.NumChunks != 0 || m.Depth != 0 || len(m.SealedMeta) != 0 || len(m.Chunks) != 0 || len(m.Continuations) != 0 {
			return errors.New("opaque manifest carries fields")
		}
		return nil
	}
	if !m.Root {
		return m.validateNode()
	}
	// A private file's manifest is sealed, a public file's never is.
	if m.Sealed != (m.Scheme == SchemeStream) {
		return fmt.Errorf("root of scheme %s is sealed=%t, want sealed exactly for encrypted files", m.Scheme, m.Sealed)
	}
	if m.Level != 0 {
		return fmt.Errorf("root carries node level %d", m.Level)
	}
	if err := streamBounds(m.Size, m.NumChunks, m.ChunkSize, m.Scheme); err != nil {
		return err
	}
	if len(m.Name) > MaxNameBytes || SanitizeName(m.Name) != m.Name {
		return fmt.Errorf("name %q is not a safe file name (safe form %q)", m.Name, SanitizeName(m.Name))
	}
	if NormalizeMediaType(m.MediaType) != m.MediaType {
		return fmt.Errorf("media type %q is not canonical (canonical form %q)", m.MediaType, NormalizeMediaType(m.MediaType))
	}
	switch m.Scheme {
	case SchemeNone:
		if len(m.SealedMeta) != 0 {
			return fmt.Errorf("unencrypted file carries %d bytes of sealed metadata", len(m.SealedMeta))
		}
	case SchemeStream:
		if m.Name != EncryptedName || m.MediaType != EncryptedMediaType {
			return fmt.Errorf("encrypted file shows name %q and media type %q, want %q and %q",
				m.Name, m.MediaType, EncryptedName, EncryptedMediaType)
		}
		if len(m.SealedMeta) < minSealedMeta || len(m.SealedMeta) > maxSealedMeta {
			return fmt.Errorf("sealed metadata of %d bytes outside [%d, %d]", len(m.SealedMeta), minSealedMeta, maxSealedMeta)
		}
	}
	levels, err := treeLevels(m.NumChunks, nodeCap(m.ChunkSize, m.Sealed), rootCap(m.ChunkSize, m.Sealed, m.Name, m.MediaType, len(m.SealedMeta)))
	if err != nil {
		return err
	}
	if depth := len(levels) - 1; m.Depth != depth {
		return fmt.Errorf("depth %d, but %d chunks of %d bytes make a tree of depth %d", m.Depth, m.NumChunks, m.ChunkSize, depth)
	}
	top := levels[len(levels)-1]
	if m.Depth == 0 {
		if len(m.Chunks) != top || len(m.Continuations) != 0 {
			return fmt.Errorf("root of depth 0 lists %d chunks and %d continuations, want %d chunks", len(m.Chunks), len(m.Continuations), top)
		}
	} else if len(m.Continuations) != top || len(m.Chunks) != 0 {
		return fmt.Errorf("root of depth %d lists %d continuations and %d chunks, want %d continuations", m.Depth, len(m.Continuations), len(m.Chunks), top)
	}
	return nil
}

func (m *Manifest) validateNode() error {
	if m.Name != "" || m.MediaType != "" || m.Size != 0 || m.Scheme != 0 || m.NumChunks != 0 || m.Depth != 0 || len(m.SealedMeta) != 0 {
		return errors.New("continuation node carries root fields")
	}
	if m.Level < 1 || m.Level > MaxDepth {
		return fmt.Errorf("node level %d outside [1, %d]", m.Level, MaxDepth)
	}
	ids := m.Continuations
	if m.Level == 1 {
		ids = m.Chunks
		if len(m.Continuations) != 0 {
			return fmt.Errorf("level-1 node lists %d continuations", len(m.Continuations))
		}
	} else if len(m.Chunks) != 0 {
		return fmt.Errorf("level-%d node lists %d data chunks", m.Level, len(m.Chunks))
	}
	if c := nodeCap(m.ChunkSize, m.Sealed); len(ids) < 1 || len(ids) > c {
		return fmt.Errorf("node lists %d ids, want 1 to %d for chunk size %d", len(ids), c, m.ChunkSize)
	}
	return nil
}

// ids returns the ids listed in the chunk, whichever kind they are.
func (m *Manifest) ids() []ID {
	if len(m.Continuations) != 0 {
		return m.Continuations
	}
	return m.Chunks
}

// Encode returns the manifest chunk's bytes, or an error if the manifest
// breaks an invariant that DecodeManifest checks. A sealed manifest needs
// its file key and its position: Share makes those.
func (m *Manifest) Encode() ([]byte, error) {
	if m.Sealed || m.Opaque {
		return nil, fmt.Errorf("%w: a sealed manifest is encoded with its file key", ErrBadManifest)
	}
	return m.encode()
}

// encode returns the cleartext encoding: the chunk of a public file's
// manifest, the sealed body of a private one's.
func (m *Manifest) encode() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	ids := m.ids()
	var out []byte
	if m.Root {
		out = make([]byte, 0, rootFixedSize+len(m.Name)+len(m.MediaType)+len(m.SealedMeta)+IDSize*len(ids))
		out = append(out, manifestMagic[:]...)
		out = append(out, ManifestVersion, kindRoot)
		out = binary.BigEndian.AppendUint32(out, uint32(m.ChunkSize))
		out = binary.BigEndian.AppendUint64(out, uint64(m.Size))
		out = append(out, byte(m.Scheme), byte(m.Depth))
		out = binary.BigEndian.AppendUint32(out, uint32(m.NumChunks))
		for _, f := range []string{m.Name, m.MediaType, string(m.SealedMeta)} {
			out = binary.BigEndian.AppendUint16(out, uint16(len(f)))
			out = append(out, f...)
		}
	} else {
		out = make([]byte, 0, nodeHeaderSize+IDSize*len(ids))
		out = append(out, manifestMagic[:]...)
		out = append(out, ManifestVersion, kindNode, byte(m.Level))
		out = binary.BigEndian.AppendUint32(out, uint32(m.ChunkSize))
	}
	out = binary.BigEndian.AppendUint32(out, uint32(len(ids)))
	for i := range ids {
		out = append(out, ids[i][:]...)
	}
	if r := room(m.ChunkSize, m.Sealed); len(out) > r {
		return nil, fmt.Errorf("%w: manifest chunk of %d bytes exceeds its room of %d bytes (chunk size %d)", ErrBadManifest, len(out), r, m.ChunkSize)
	}
	return out, nil
}

// reader reads big-endian fields from a bounded byte slice.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = fmt.Errorf("%s needs %d bytes, %d left", what, n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8(what string) int {
	if b := r.take(1, what); b != nil {
		return int(b[0])
	}
	return 0
}

func (r *reader) u16(what string) int {
	if b := r.take(2, what); b != nil {
		return int(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) u32(what string) uint32 {
	if b := r.take(4, what); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if b := r.take(8, what); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// DecodeManifest decodes and fully validates one manifest chunk (a root or a
// continuation node). It allocates no more than the chunk's own length and
// accepts only canonical encodings: Encode gives back the same bytes. A
// private file's sealed manifest chunk decodes as Opaque (its header and
// exact length b checked, nothing else known); NewAssembler opens it with
// the file key.
func DecodeManifest(chunk []byte) (*Manifest, error) {
	m, err := decodeManifest(chunk, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	return m, nil
}

// decodeManifest decodes a manifest chunk, or (inner) the opened body of
// a sealed one, which has the cleartext form within a smaller room.
func decodeManifest(chunk []byte, inner bool) (*Manifest, error) {
	if len(chunk) > MaxChunkSize {
		return nil, fmt.Errorf("%d bytes, larger than any chunk (%d)", len(chunk), MaxChunkSize)
	}
	r := &reader{b: chunk}
	if mg := r.take(len(manifestMagic), "magic"); mg == nil || !bytes.Equal(mg, manifestMagic[:]) {
		return nil, errors.New("no manifest magic")
	}
	if v := r.u8("version"); r.err == nil && v != ManifestVersion {
		return nil, fmt.Errorf("version %d, want %d", v, ManifestVersion)
	}
	kind := r.u8("kind")
	if r.err != nil {
		return nil, r.err
	}
	m := &Manifest{Sealed: inner}
	switch kind {
	case kindSealed:
		if inner {
			return nil, errors.New("sealed manifest within a sealed manifest")
		}
		b := int(r.u32("chunk size"))
		if r.err != nil {
			return nil, r.err
		}
		if err := checkChunkSize(b); err != nil {
			return nil, err
		}
		// Padded to a whole chunk: its length says nothing.
		if len(chunk) != b {
			return nil, fmt.Errorf("sealed manifest of %d bytes, want its chunk size %d", len(chunk), b)
		}
		return &Manifest{Sealed: true, Opaque: true, ChunkSize: b}, nil
	case kindRoot:
		m.Root = true
		m.ChunkSize = int(r.u32("chunk size"))
		size := r.u64("size")
		m.Scheme = Scheme(r.u8("scheme"))
		m.Depth = r.u8("depth")
		m.NumChunks = int(r.u32("chunk count"))
		if r.err != nil {
			return nil, r.err
		}
		if err := checkChunkSize(m.ChunkSize); err != nil {
			return nil, err
		}
		if size > math.MaxInt64 {
			return nil, fmt.Errorf("size %d too large", size)
		}
		m.Size = int64(size)
		// Bound everything before any allocation that depends on counts.
		if err := streamBounds(m.Size, m.NumChunks, m.ChunkSize, m.Scheme); err != nil {
			return nil, err
		}
		if m.Depth > MaxDepth {
			return nil, fmt.Errorf("depth %d, at most %d", m.Depth, MaxDepth)
		}
		m.Name = string(r.take(r.u16("name length"), "name"))
		m.MediaType = string(r.take(r.u16("media type length"), "media type"))
		if sealed := r.take(r.u16("sealed metadata length"), "sealed metadata"); len(sealed) > 0 {
			m.SealedMeta = bytes.Clone(sealed)
		}
	case kindNode:
		m.Level = r.u8("level")
		m.ChunkSize = int(r.u32("chunk size"))
		if r.err == nil {
			if err := checkChunkSize(m.ChunkSize); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("unknown kind %d", kind)
	}
	count := r.u32("id count")
	if r.err != nil {
		return nil, r.err
	}
	if rm := room(m.ChunkSize, inner); len(chunk) > rm {
		return nil, fmt.Errorf("%d bytes exceed its room of %d bytes (chunk size %d)", len(chunk), rm, m.ChunkSize)
	}
	if uint64(count)*IDSize != uint64(len(r.b)) {
		return nil, fmt.Errorf("claims %d ids but %d bytes follow", count, len(r.b))
	}
	ids := make([]ID, count)
	for i := range ids {
		copy(ids[i][:], r.take(IDSize, "id"))
	}
	if (m.Root && m.Depth == 0) || (!m.Root && m.Level == 1) {
		m.Chunks = ids
	} else {
		m.Continuations = ids
	}
	if count == 0 {
		m.Chunks, m.Continuations = nil, nil
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}
