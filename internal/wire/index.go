package wire

// Chunks and the public index (§7).

import "fmt"

// Chunk is a chunk by id (request: Data empty).
type Chunk struct {
	ID   [32]byte
	Data []byte
}

func (m *Chunk) Marshal() []byte {
	var e Enc
	e.Grow(32 + 4 + len(m.Data))
	e.Fixed(m.ID[:])
	e.Bytes(m.Data)
	return e.B
}

func (m *Chunk) Unmarshal(b []byte, max int) error {
	d := Dec{B: b}
	m.ID = d.Array32("chunk id")
	m.Data = d.Bytes(max, "chunk")
	return d.Done("chunk")
}

// IndexEntry is one file of the public index (§7).
type IndexEntry struct {
	FileID [32]byte
	Name   []byte
	Size   uint64
	Chunks uint32
	Round  uint32
	Time   int64 // unix seconds, first publication
}

// MaxManifest bounds one manifest chunk of the index: the largest chunk
// size b (§3). MinManifest is the shortest one, a continuation node's
// header (docs/proto-chunker.md): a count of manifests is checked against
// it before anything is allocated.
const (
	MaxManifest = 4 << 20
	MinManifest = 19
)

// Index sync (§7 v3): a client asks any server for the changes to the
// public index after a cursor, and reads them page by page.
const (
	// IndexReqSize is an IndexReq's fixed size: u64 cursor.
	IndexReqSize = 8
	// IndexPageBytes bounds what a server puts in one page: the entries,
	// manifests and removed ids it adds stop once the next would pass it
	// (a page holds at least one). A single manifest (at most MaxManifest)
	// with its entry always fits.
	IndexPageBytes = 8 << 20
	// MaxIndexPage caps the body of one Index page: IndexPageBytes, the
	// page header (u64 next, u8 more, three u32 counts) and slack.
	MaxIndexPage = IndexPageBytes + 1024
	// indexEntryMin is an entry's size with an empty name: file id 32,
	// name length 4, size 8, chunks 4, round 4, time 8.
	indexEntryMin = 32 + 4 + 8 + 4 + 4 + 8
)

// IndexReq asks for the index changes a server logged after Cursor (0: all
// of them). Fixed size: IndexReqSize.
type IndexReq struct {
	Cursor uint64
}

func (m *IndexReq) Marshal() []byte {
	var e Enc
	e.U64(m.Cursor)
	return e.B
}

func (m *IndexReq) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Cursor = d.U64("cursor")
	return d.Done("index request")
}

// Index is one page of the public index (§7): the files (one entry per
// root manifest in clear), the bytes of the manifest chunks indexed, roots
// and inner nodes alike (§6.4 v3), and the ids of manifests that left the
// index, all logged by the server after the request's cursor and up to
// Next. More says that changes follow Next. A manifest's id is the SHA-256
// of its bytes: the receiver computes it, and checks that the bytes parse.
//
//	u64 next ‖ u8 more (0 or 1)
//	‖ u32 n ‖ n × (file id 32 ‖ bytes name ‖ u64 size ‖ u32 chunks ‖ u32 round ‖ u64 unix time)
//	‖ u32 n ‖ n × bytes manifest
//	‖ u32 n ‖ n × removed manifest id 32
//	‖ u32 n ‖ n × bytes closing record (§7 v3, Closing)
type Index struct {
	Next      uint64
	More      bool
	Entries   []IndexEntry
	Manifests [][]byte
	Removed   [][32]byte
	Closings  [][]byte
}

func (m *Index) Marshal() []byte {
	var e Enc
	e.U64(m.Next)
	if m.More {
		e.U8(1)
	} else {
		e.U8(0)
	}
	e.U32(uint32(len(m.Entries)))
	for _, x := range m.Entries {
		e.Fixed(x.FileID[:])
		e.Bytes(x.Name)
		e.U64(x.Size)
		e.U32(x.Chunks)
		e.U32(x.Round)
		e.U64(uint64(x.Time))
	}
	e.U32(uint32(len(m.Manifests)))
	for _, x := range m.Manifests {
		e.Bytes(x)
	}
	e.U32(uint32(len(m.Removed)))
	for _, x := range m.Removed {
		e.Fixed(x[:])
	}
	e.U32(uint32(len(m.Closings)))
	for _, x := range m.Closings {
		e.Bytes(x)
	}
	return e.B
}

// Unmarshal decodes an index page of at most max entries, max manifests
// and max removed ids, each manifest of at most MaxManifest bytes; every
// count is checked against the bytes left before anything is allocated,
// and the caller bounds the whole message (its reply cap).
func (m *Index) Unmarshal(b []byte, max int) error {
	d := Dec{B: b}
	m.Next = d.U64("next")
	more := d.U8("more flag")
	if d.Err == nil && more > 1 {
		return fmt.Errorf("wire: decode index: more flag %d", more)
	}
	m.More = more == 1
	n := d.Count(max, indexEntryMin, "index entries")
	m.Entries = nil
	if n > 0 {
		m.Entries = make([]IndexEntry, n)
	}
	for i := range m.Entries {
		x := &m.Entries[i]
		x.FileID = d.Array32("file id")
		x.Name = d.Bytes(MaxName, "name")
		x.Size = d.U64("size")
		x.Chunks = d.U32("chunks")
		x.Round = d.U32("round")
		x.Time = int64(d.U64("time"))
	}
	n = d.Count(max, 4+MinManifest, "index manifests")
	m.Manifests = nil
	if n > 0 {
		m.Manifests = make([][]byte, n)
		for i := range m.Manifests {
			m.Manifests[i] = d.Bytes(MaxManifest, "manifest")
			if d.Err == nil && len(m.Manifests[i]) < MinManifest {
				d.Err = fmt.Errorf("%w: manifest of %d bytes < %d", ErrShort, len(m.Manifests[i]), MinManifest)
			}
		}
	}
	n = d.Count(max, IDSize, "removed manifests")
	m.Removed = nil
	if n > 0 {
		m.Removed = make([][32]byte, n)
		for i := range m.Removed {
			m.Removed[i] = d.Array32("removed id")
		}
	}
	// A closing record is at least an epoch id and two counts.
	n = d.Count(max, 4+32+8, "closing records")
	m.Closings = nil
	if n > 0 {
		m.Closings = make([][]byte, n)
		for i := range m.Closings {
			m.Closings[i] = d.Bytes(MaxClosing, "closing record")
			if d.Err == nil && len(m.Closings[i]) < 32+8 {
				d.Err = fmt.Errorf("%w: closing record of %d bytes", ErrShort, len(m.Closings[i]))
			}
		}
	}
	return d.Done("index")
}

// MaxIndexPageItems bounds the items of one page of at most MaxIndexPage
// bytes: no entry, manifest or removed id is shorter than MinManifest+4.
const MaxIndexPageItems = MaxIndexPage / (MinManifest + 4)
