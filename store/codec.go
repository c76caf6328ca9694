package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/riffle-net/riffle/internal/wire"
)

// Record encodings. Every value this package writes besides chunk bytes is
// one of the records below, encoded as u8 record version, then fixed-size
// big-endian fields and u32-length-prefixed variable fields, in the order
// written in docs/proto-store.md. The primitives are internal/wire's Enc
// and Dec, the codec of the network messages (one codec for the project):
// the same big-endian integers, 32-byte ids and u32-prefixed fields, with
// the same bounds on counts before any allocation. What is the store's
// own, and kept here: the record version byte, times as Unix nanoseconds,
// UTF-8 checks on texts, copying decoded bytes out of the (memory-mapped)
// value, and errCorrupt wrapped around every decoding failure. Decoders
// reject trailing bytes and are fuzzed.

// recordVersion is the first byte of every encoded record. A database with
// records of another version is refused rather than misread.
const recordVersion = 1

// Bounds on variable-length fields. They are far above what the protocol
// produces (§3 caps rounds, clients and rows), and exist so that a
// corrupted or hostile value cannot make a decoder allocate without limit.
const (
	// MaxChunkSize is the largest chunk the store accepts: §3 allows
	// a chunk size b of up to 4 MiB.
	MaxChunkSize = 4 << 20
	// MaxNameBytes bounds a file name in the public index (UTF-8 bytes).
	MaxNameBytes = 4096
	// MaxTextBytes bounds short free texts (an epoch's end reason, a link,
	// a local path).
	MaxTextBytes = 8192
	// MaxRoundIDs bounds the published ids and the request list of one
	// round record (§3: n and L are capped well below this).
	MaxRoundIDs = 1 << 20
	// MaxDescriptor bounds the signed epoch descriptor kept in an epoch
	// record (R ≤ 1024 round keys per server plus the client list).
	MaxDescriptor = 64 << 20
)

// errCorrupt is wrapped by every decoding failure.
var errCorrupt = errors.New("store: corrupt record")

// enc is wire.Enc with the store's field kinds.
type enc struct{ wire.Enc }

func (e *enc) id(v [32]byte)    { e.Fixed(v[:]) }
func (e *enc) bytes(v []byte)   { e.Bytes(v) }
func (e *enc) str(v string)     { e.U32(uint32(len(v))); e.B = append(e.B, v...) }
func (e *enc) time(v time.Time) { e.U64(uint64(timeNanos(v))) }

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

// dec is wire.Dec (the first failure sticks in Err) reading one record
// named what.
type dec struct {
	wire.Dec
	what string
}

func (d *dec) fail(format string, args ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf(format, args...)
	}
}

func (d *dec) id(field string) [32]byte    { return d.Array32(field) }
func (d *dec) time(field string) time.Time { return nanosTime(int64(d.U64(field))) }

// bytes reads a u32-prefixed field of at most max bytes, copied out of
// the value (which may be a memory map).
func (d *dec) bytes(field string, max int) []byte {
	v := d.Bytes(max, field)
	if len(v) == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}

// str reads a u32-prefixed UTF-8 string of at most max bytes.
func (d *dec) str(field string, max int) string {
	v := d.Bytes(max, field)
	if d.Err == nil && !utf8.Valid(v) {
		d.fail("%s is not UTF-8", field)
	}
	return string(v)
}

func (d *dec) version() {
	if v := d.U8("version"); d.Err == nil && v != recordVersion {
		d.fail("record version %d, want %d", v, recordVersion)
	}
}

// finish returns the first failure, or one for trailing bytes, as a
// corrupt-record error.
func (d *dec) finish() error {
	if err := d.Done(d.what); err != nil {
		return fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return nil
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
