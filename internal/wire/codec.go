// Package wire is the binary codec of riffle's network messages (§3–§6):
// length-framed messages (u8 type, u32 big-endian body length, body) and
// explicit, bounded field layouts for every message the node exchanges.
// A body is read as its bytes arrive, into a buffer that starts at
// BodyStart and at most doubles (TestFrameHeaderReservesLittle): a header
// costs what was sent, not what it claims.
//
// Every decoder here reads untrusted bytes: each one is bounded by a caller-
// supplied maximum that the node computes from the epoch parameters, rejects
// trailing bytes, and never allocates more than a small multiple of the
// bytes actually present (TestDecodeAllocationBounded). The one message
// that is larger decoded than sent, a Batch with zero runs, is rebuilt only
// once its whole body has been read, and no further than its Limits allow
// (Onion per entry, Frame in all); PeekBatch lets a receiver check its
// sender and signature before that. The layouts are written down in
// docs/proto-node.md; the message table (table.go) lists every type with
// its protocol, cap and decoder, and every one's encoding is pinned in
// testdata/vectors.txt (TestVectors).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// HeaderSize is the size of a frame header: u8 type, u32 body length.
const HeaderSize = 5

// MaxFrame is the absolute ceiling on any frame body (1 GiB); per-type caps,
// computed from the epoch parameters, are much lower.
const MaxFrame = 1 << 30

// Type identifies a message.
type Type uint8

// ErrTooLarge is returned when a frame's announced length exceeds the cap.
var ErrTooLarge = errors.New("wire: frame too large")

// ErrShort is returned when a body ends before a field is complete.
var ErrShort = errors.New("wire: truncated body")

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, t Type, body []byte) error {
	if len(body) > MaxFrame {
		return fmt.Errorf("%w: %d bytes of type %d", ErrTooLarge, len(body), t)
	}
	var h [HeaderSize]byte
	h[0] = byte(t)
	binary.BigEndian.PutUint32(h[1:], uint32(len(body)))
	if _, err := w.Write(h[:]); err != nil {
		return fmt.Errorf("wire: write header of type %d: %w", t, err)
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("wire: write body of type %d (%d bytes): %w", t, len(body), err)
	}
	return nil
}

// ReadFrame reads one frame of type want whose body is at most max bytes.
// A frame of another type whose body is a UTF-8 error text (type ErrorMsg)
// is returned as a *RemoteError.
func ReadFrame(r io.Reader, want Type, max int) ([]byte, error) {
	return ReadFrameInto(r, want, max, nil)
}

// ReadFrameInto is ReadFrame with the body read into buffers from bufs
// (nil: new slices).
func ReadFrameInto(r io.Reader, want Type, max int, bufs *Buffers) ([]byte, error) {
	n, err := readHeader(r, want, max)
	if err != nil {
		return nil, err
	}
	b, err := readBody(r, n, bufs)
	if err != nil {
		return nil, fmt.Errorf("wire: read body of type %d (%d bytes): %w", want, n, err)
	}
	return b, nil
}

// ReadFrameTo is ReadFrame with the body read straight into dst, a buffer
// the caller keeps and reads into again and again (a client's PIR answers):
// nothing is allocated, grown or copied. The cap is min(max, len(dst)).
// The returned body is dst's first bytes.
func ReadFrameTo(r io.Reader, want Type, max int, dst []byte) ([]byte, error) {
	n, err := readHeader(r, want, min(max, len(dst)))
	if err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(r, dst[:n]); err != nil {
		if errors.Is(err, io.EOF) && n > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("wire: read body of type %d (%d bytes): %w", want, n, err)
	}
	return dst[:n], nil
}

// readHeader reads a frame's header and returns its body's length: of
// type want and at most max bytes, or a refusal read whole as a
// *RemoteError.
func readHeader(r io.Reader, want Type, max int) (int, error) {
	var h [HeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, fmt.Errorf("wire: read header (want type %d): %w", want, err)
	}
	t := Type(h[0])
	n := int64(binary.BigEndian.Uint32(h[1:]))
	if t == TypeError {
		if n > MaxErrorText {
			return 0, fmt.Errorf("%w: error text of %d bytes > %d", ErrTooLarge, n, MaxErrorText)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return 0, fmt.Errorf("wire: read error text: %w", err)
		}
		return 0, &RemoteError{Text: string(b)}
	}
	if t != want {
		return 0, fmt.Errorf("wire: got message type %d, want %d", t, want)
	}
	if n > int64(max) || n > MaxFrame {
		return 0, fmt.Errorf("%w: type %d body of %d bytes > cap %d", ErrTooLarge, t, n, max)
	}
	return int(n), nil
}

// Buffers recycles the buffers frame bodies are read into. Get returns a
// buffer of length n (its bytes need not be zero); Put takes back one
// from Get that the reader no longer uses. A nil Put keeps nothing. A body
// is read into several of Get's buffers at once, so each must be memory
// of its own (a caller that reuses one buffer of the cap's size reads into
// it with ReadFrameTo instead).
type Buffers struct {
	Get func(n int) []byte
	Put func(b []byte)
}

func (bs *Buffers) get(n int) []byte {
	if bs == nil || bs.Get == nil {
		return make([]byte, n)
	}
	return bs.Get(n)
}

func (bs *Buffers) put(b []byte) {
	if bs != nil && bs.Put != nil {
		bs.Put(b)
	}
}

// BodyStart is the buffer a body's first bytes are read into. A header
// alone reserves no more: what the reader takes at most doubles once it is
// full, so a reader holds at most about twice the bytes its peer really
// sent (§3 "Identify first, work later"), not the length the header
// claims.
const BodyStart = 64 << 10

// readBody reads a body of n bytes as they arrive. Until half of it came,
// it reads into pieces from bufs, each at most as large as all before it
// (nothing copied); then into one buffer of n, the pieces copied to its
// start once and given back. So a body costs half its length in copies
// (TestBodyCopiedOnce), where a buffer grown by doubling copied one to two
// times it, and the reader never takes more than twice what came.
func readBody(r io.Reader, n int, bufs *Buffers) ([]byte, error) {
	var held [16][]byte
	pieces := held[:0]
	putAll := func() {
		for _, p := range pieces {
			bufs.put(p)
		}
	}
	got, half := 0, n-n/2
	for n > BodyStart && got < half {
		p := bufs.get(min(max(got, BodyStart), half-got))
		pieces = append(pieces, p)
		m, err := io.ReadFull(r, p)
		got += m
		if err != nil {
			putAll()
			return nil, bodyErr(err, n)
		}
	}
	b := bufs.get(n)
	at := 0
	for _, p := range pieces {
		at += copy(b[at:], p)
	}
	putAll()
	if _, err := io.ReadFull(r, b[got:n]); err != nil {
		bufs.put(b)
		return nil, bodyErr(err, n)
	}
	return b[:n], nil
}

// bodyErr is a body's read error; the end of the stream before n bytes is
// unexpected.
func bodyErr(err error, n int) error {
	if errors.Is(err, io.EOF) && n > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// TypeError carries a refusal with its reason instead of the expected reply.
const TypeError Type = 255

// MaxErrorText bounds the reason of a refusal.
const MaxErrorText = 1024

// RemoteError is a refusal received from the peer.
type RemoteError struct{ Text string }

func (e *RemoteError) Error() string { return "peer refused: " + e.Text }

// Is reports whether the peer's refusal is the Refusal target: a refusal
// crosses the wire as its text, and is recognised by that whole text.
func (e *RemoteError) Is(target error) bool {
	r, ok := target.(Refusal)
	return ok && e.Text == string(r)
}

// Refusal is a refusal that its receiver may tell apart from others: a
// sentinel whose text is its identity on the wire, so that errors.Is
// holds for it on both ends, as returned locally and as received in a
// *RemoteError (sent unwrapped: WriteError sends the error's whole text).
type Refusal string

func (r Refusal) Error() string { return string(r) }

// WriteFrameSegments writes one frame whose body is the concatenation of
// segs (from Enc.Segments), without joining them first.
func WriteFrameSegments(w io.Writer, t Type, segs [][]byte) error {
	n := SegmentsLen(segs)
	if n > MaxFrame {
		return fmt.Errorf("%w: %d bytes of type %d", ErrTooLarge, n, t)
	}
	var h [HeaderSize]byte
	h[0] = byte(t)
	binary.BigEndian.PutUint32(h[1:], uint32(n))
	if _, err := w.Write(h[:]); err != nil {
		return fmt.Errorf("wire: write header of type %d: %w", t, err)
	}
	for _, s := range segs {
		if _, err := w.Write(s); err != nil {
			return fmt.Errorf("wire: write body of type %d (%d bytes): %w", t, n, err)
		}
	}
	return nil
}

// WriteError sends a refusal, truncated to MaxErrorText bytes.
func WriteError(w io.Writer, err error) error {
	s := err.Error()
	if len(s) > MaxErrorText {
		s = s[:MaxErrorText]
	}
	return WriteFrame(w, TypeError, []byte(s))
}

// Enc appends big-endian fields to a byte slice. With Refs set, Bytes
// fields of at least RefMin bytes are not copied: the encoding becomes a
// list of segments (Segments) that refer to the caller's slices, so that a
// bulk message (a batch of onions, PIR rows) goes to the stream without
// first being copied into one buffer the size of the message.
type Enc struct {
	B    []byte
	Refs bool
	segs [][]byte
}

// RefMin is the smallest field an Enc with Refs refers to instead of
// copying: below it, a copy is cheaper than one more write.
const RefMin = 4 << 10

// Segments returns the encoding as a list of segments, in order; their
// concatenation is the message. The Enc must not be used afterwards.
func (e *Enc) Segments() [][]byte {
	if len(e.B) > 0 || len(e.segs) == 0 {
		e.segs = append(e.segs, e.B)
		e.B = nil
	}
	return e.segs
}

// SegmentsLen is the total length of segments.
func SegmentsLen(segs [][]byte) int {
	n := 0
	for _, s := range segs {
		n += len(s)
	}
	return n
}

// Grow makes room for n more bytes, so that a bulk message (batches of
// onions, PIR rows) is built with one allocation instead of a chain of
// copies.
func (e *Enc) Grow(n int) {
	if n > cap(e.B)-len(e.B) {
		b := make([]byte, len(e.B), len(e.B)+n)
		copy(b, e.B)
		e.B = b
	}
}

// sizeOfBytes is the encoded size of a list of length-prefixed fields.
func sizeOfBytes(l [][]byte) int {
	n := 4
	for _, b := range l {
		n += 4 + len(b)
	}
	return n
}

func (e *Enc) U8(v uint8)   { e.B = append(e.B, v) }
func (e *Enc) U16(v uint16) { e.B = binary.BigEndian.AppendUint16(e.B, v) }
func (e *Enc) U32(v uint32) { e.B = binary.BigEndian.AppendUint32(e.B, v) }
func (e *Enc) U64(v uint64) { e.B = binary.BigEndian.AppendUint64(e.B, v) }

// Fixed appends bytes whose length the layout fixes (no prefix).
func (e *Enc) Fixed(b []byte) { e.B = append(e.B, b...) }

// Bytes appends a u32 length prefix and the bytes.
func (e *Enc) Bytes(b []byte) {
	e.U32(uint32(len(b)))
	e.raw(b)
}

// Bytes2 appends a u32 length prefix and the bytes of a then b, as one
// field (with Refs, each part is referred to or copied on its own).
func (e *Enc) Bytes2(a, b []byte) {
	e.U32(uint32(len(a) + len(b)))
	e.raw(a)
	e.raw(b)
}

// raw appends b without a prefix. With Refs and a big b: the scratch
// buffer so far, then the caller's slice itself; a new scratch buffer
// follows (the old one is now a segment).
func (e *Enc) raw(b []byte) {
	if e.Refs && len(b) >= RefMin {
		e.segs = append(e.segs, e.B, b)
		e.B = make([]byte, 0, 256)
		return
	}
	e.B = append(e.B, b...)
}

// Dec reads big-endian fields; the first error sticks and later reads return
// zero values, so that a decoder checks Err once at the end.
type Dec struct {
	B   []byte
	Err error
}

func (d *Dec) need(n int, what string) []byte {
	if d.Err != nil {
		return nil
	}
	if n < 0 || len(d.B) < n {
		d.Err = fmt.Errorf("%w: %s needs %d bytes, %d left", ErrShort, what, n, len(d.B))
		return nil
	}
	b := d.B[:n:n]
	d.B = d.B[n:]
	return b
}

func (d *Dec) U8(what string) uint8 {
	if b := d.need(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (d *Dec) U16(what string) uint16 {
	if b := d.need(2, what); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (d *Dec) U32(what string) uint32 {
	if b := d.need(4, what); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *Dec) U64(what string) uint64 {
	if b := d.need(8, what); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// Fixed returns the next n bytes (a sub-slice of the body; copy to keep).
func (d *Dec) Fixed(n int, what string) []byte { return d.need(n, what) }

// Array32 reads 32 bytes.
func (d *Dec) Array32(what string) (a [32]byte) {
	copy(a[:], d.need(32, what))
	return a
}

// Array64 reads 64 bytes.
func (d *Dec) Array64(what string) (a [64]byte) {
	copy(a[:], d.need(64, what))
	return a
}

// Bytes reads a u32-prefixed byte string of at most max bytes.
func (d *Dec) Bytes(max int, what string) []byte {
	n := d.U32(what + " length")
	if d.Err != nil {
		return nil
	}
	if int64(n) > int64(max) {
		d.Err = fmt.Errorf("%w: %s of %d bytes > cap %d", ErrTooLarge, what, n, max)
		return nil
	}
	return d.need(int(n), what)
}

// Count reads a u32 element count, at most max, and checks that at least
// minEach bytes per element remain, so that a hostile count cannot make the
// caller allocate more than the body justifies.
func (d *Dec) Count(max, minEach int, what string) int {
	n := d.U32(what + " count")
	if d.Err != nil {
		return 0
	}
	if int64(n) > int64(max) {
		d.Err = fmt.Errorf("%w: %d %s > cap %d", ErrTooLarge, n, what, max)
		return 0
	}
	if minEach > 0 && int64(n)*int64(minEach) > int64(len(d.B)) {
		d.Err = fmt.Errorf("%w: %d %s need at least %d bytes, %d left", ErrShort, n, what, int64(n)*int64(minEach), len(d.B))
		return 0
	}
	return int(n)
}

// Done returns the sticky error, or an error if bytes remain.
func (d *Dec) Done(msg string) error {
	if d.Err != nil {
		return fmt.Errorf("wire: decode %s: %w", msg, d.Err)
	}
	if len(d.B) != 0 {
		return fmt.Errorf("wire: decode %s: %d trailing bytes", msg, len(d.B))
	}
	return nil
}

// ReadAny reads one frame of any type for which max returns a positive cap,
// as a request handler does.
func ReadAny(r io.Reader, max func(Type) int) (Type, []byte, error) {
	return ReadAnyInto(r, max, nil)
}

// ReadAnyInto is ReadAny with the body read into buffers from bufs (nil:
// new slices).
func ReadAnyInto(r io.Reader, max func(Type) int, bufs *Buffers) (Type, []byte, error) {
	var h [HeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, fmt.Errorf("wire: read header: %w", err)
	}
	t := Type(h[0])
	n := int64(binary.BigEndian.Uint32(h[1:]))
	c := max(t)
	if c <= 0 {
		return t, nil, fmt.Errorf("wire: unexpected message type %d", t)
	}
	if n > int64(c) || n > MaxFrame {
		return t, nil, fmt.Errorf("%w: type %d body of %d bytes > cap %d", ErrTooLarge, t, n, c)
	}
	b, err := readBody(r, int(n), bufs)
	if err != nil {
		return t, nil, fmt.Errorf("wire: read body of type %d (%d bytes): %w", t, n, err)
	}
	return t, b, nil
}
