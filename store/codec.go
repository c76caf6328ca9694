package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Record encodings. Every value this package writes besides chunk bytes is
// one of the records below, encoded as u8 record version, then fixed-size
// big-endian fields and u32-length-prefixed variable fields, in the order
// written in docs/proto-store.md. Decoders bound every count by the bytes
// actually present before allocating, reject trailing bytes, and are fuzzed.

// recordVersion is the first byte of every encoded record. A database with
// records of another version is refused rather than misread.
const recordVersion = 1

// Bounds on variable-length fields. They are far above what the protocol
// produces (SPEC §3 caps rounds, clients and rows), and exist so that a
// corrupted or hostile value cannot make a decoder allocate without limit.
const (
	// MaxChunkSize is the largest chunk the store accepts: SPEC §3 allows
	// a chunk size b of up to 4 MiB.
	MaxChunkSize = 4 << 20
	// MaxNameBytes bounds a file name in the public index (UTF-8 bytes).
	MaxNameBytes = 4096
	// MaxTextBytes bounds short free texts (an epoch's end reason, a link,
	// a local path).
	MaxTextBytes = 8192
	// MaxRoundIDs bounds the published ids and the request list of one
	// round record (SPEC §3: n and L are capped well below this).
	MaxRoundIDs = 1 << 20
	// MaxDescriptor bounds the signed epoch descriptor kept in an epoch
	// record (R ≤ 1024 round keys per server plus the client list).
	MaxDescriptor = 64 << 20
)

// errCorrupt is wrapped by every decoding failure.
var errCorrupt = errors.New("store: corrupt record")

// enc appends big-endian fields to a byte slice.
type enc struct{ b []byte }

func (e *enc) u8(v uint8)       { e.b = append(e.b, v) }
func (e *enc) u32(v uint32)     { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64)     { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) id(v [32]byte)    { e.b = append(e.b, v[:]...) }
func (e *enc) bytes(v []byte)   { e.u32(uint32(len(v))); e.b = append(e.b, v...) }
func (e *enc) str(v string)     { e.u32(uint32(len(v))); e.b = append(e.b, v...) }
func (e *enc) time(v time.Time) { e.u64(uint64(timeNanos(v))) }

// timeNanos encodes a time as Unix nanoseconds, the zero time as 0.
func timeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// nanosTime is the inverse of timeNanos.
func nanosTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// dec reads big-endian fields; the first failure sticks in err.
type dec struct {
	b    []byte
	what string
	err  error
}

func (d *dec) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s: %s", errCorrupt, d.what, fmt.Sprintf(format, args...))
	}
}

func (d *dec) take(n int, field string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b) < n {
		d.fail("%s needs %d bytes, %d left", field, n, len(d.b))
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8(field string) uint8 {
	if v := d.take(1, field); v != nil {
		return v[0]
	}
	return 0
}

func (d *dec) u32(field string) uint32 {
	if v := d.take(4, field); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *dec) u64(field string) uint64 {
	if v := d.take(8, field); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *dec) id(field string) (out [32]byte) {
	copy(out[:], d.take(32, field))
	return out
}

func (d *dec) time(field string) time.Time { return nanosTime(int64(d.u64(field))) }

// bytes reads a u32-prefixed field of at most max bytes, copied out.
func (d *dec) bytes(field string, max int) []byte {
	n := d.u32(field + " length")
	if d.err == nil && int64(n) > int64(max) {
		d.fail("%s of %d bytes exceeds %d", field, n, max)
		return nil
	}
	v := d.take(int(n), field)
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

// str reads a u32-prefixed UTF-8 string of at most max bytes.
func (d *dec) str(field string, max int) string {
	v := d.bytes(field, max)
	if d.err == nil && !utf8.Valid(v) {
		d.fail("%s is not UTF-8", field)
	}
	return string(v)
}

// count reads a u32 element count and checks that count elements of size
// bytes each can be present and that count ≤ max, before any allocation.
func (d *dec) count(field string, size, max int) int {
	n := d.u32(field + " count")
	if d.err != nil {
		return 0
	}
	if int64(n) > int64(max) {
		d.fail("%d %s exceed %d", n, field, max)
		return 0
	}
	if int64(n)*int64(size) > int64(len(d.b)) {
		d.fail("%d %s need %d bytes, %d left", n, field, int64(n)*int64(size), len(d.b))
		return 0
	}
	return int(n)
}

func (d *dec) version() {
	if v := d.u8("version"); d.err == nil && v != recordVersion {
		d.fail("record version %d, want %d", v, recordVersion)
	}
}

func (d *dec) finish() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}

func validText(field, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("store: %s of %d bytes exceeds %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("store: %s is not valid UTF-8", field)
	}
	return nil
}

// chunkMeta is the value of bucketChunkMeta: when a chunk was last put
// (published, fetched or listed in a request list: retention counts from
// there) and its length, kept apart from the chunk bytes so that refreshing
// it never rewrites the chunk's pages.
type chunkMeta struct {
	touched time.Time
	length  uint32
}

// chunkMetaSize is u64 touched (Unix ns) ‖ u32 length.
const chunkMetaSize = 8 + 4

func (m chunkMeta) encode() []byte {
	var b [chunkMetaSize]byte
	binary.BigEndian.PutUint64(b[:8], uint64(timeNanos(m.touched)))
	binary.BigEndian.PutUint32(b[8:], m.length)
	return b[:]
}

func decodeChunkMeta(b []byte) (chunkMeta, error) {
	if len(b) != chunkMetaSize {
		return chunkMeta{}, fmt.Errorf("%w: chunk meta of %d bytes, want %d", errCorrupt, len(b), chunkMetaSize)
	}
	return chunkMeta{
		touched: nanosTime(int64(binary.BigEndian.Uint64(b[:8]))),
		length:  binary.BigEndian.Uint32(b[8:]),
	}, nil
}
