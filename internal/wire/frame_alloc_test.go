package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/iotest"
)

// header is a frame header of type t declaring a body of n bytes.
func header(t Type, n uint32) []byte {
	h := []byte{byte(t), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[1:], n)
	return h
}

// TestFrameHeaderReservesLittle (§3 "Identify first, work later": bodies are read as bytes
// arrive): a header that declares a large body, followed by a few bytes
// and the end of the stream, costs a reader about what arrived, not what
// the header claims; a declared length above the cap is still refused at
// once.
func TestFrameHeaderReservesLittle(t *testing.T) {
	const maxAlloc = 1 << 20
	for _, declared := range []uint32{4 << 20, 256 << 20, MaxFrame} {
		frame := append(header(TypeBatch, declared), make([]byte, 100)...)
		var err1, err2 error
		got := allocBytes(func() {
			_, err1 = ReadFrame(bytes.NewReader(frame), TypeBatch, MaxFrame)
			_, _, err2 = ReadAny(bytes.NewReader(frame), func(Type) int { return MaxFrame })
		})
		t.Logf("header declaring %d bytes, 100 sent: %d bytes allocated by ReadFrame and ReadAny", declared, got)
		if !errors.Is(err1, io.ErrUnexpectedEOF) || !errors.Is(err2, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated body: %v, %v", err1, err2)
		}
		if got > maxAlloc {
			t.Errorf("a header declaring %d bytes with 100 sent allocated %d bytes > %d", declared, got, maxAlloc)
		}
	}
	// Above the cap: refused before anything is read or allocated.
	frame := header(TypeBatch, 1<<20+1)
	var err error
	if got := allocBytes(func() { _, err = ReadFrame(bytes.NewReader(frame), TypeBatch, 1<<20) }); got > 4<<10 || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the cap: %v, %d bytes allocated", err, got)
	}
}

// TestManyHeadersReserveLittle is the attack of 64 streams that each send
// a header of a client submission's cap (about 4 MiB) and nothing more:
// the bodies held open cost a reader a bounded start buffer each.
func TestManyHeadersReserveLittle(t *testing.T) {
	const streams, declared = 64, 4<<20 + 300<<10
	got := allocBytes(func() {
		for range streams {
			_, _, _ = ReadAny(bytes.NewReader(header(TypeSubmit, declared)), func(Type) int { return declared })
		}
	})
	t.Logf("%d headers declaring %d bytes each, no body: %d bytes allocated", streams, declared, got)
	if got > streams*(128<<10) {
		t.Fatalf("%d headers allocated %d bytes", streams, got)
	}
}

// countingBuffers is a Buffers that counts the bytes it hands out and
// takes back.
type countingBuffers struct {
	mu        sync.Mutex
	got, back int
	out       map[*byte]bool
}

func (c *countingBuffers) buffers() *Buffers {
	c.out = map[*byte]bool{}
	return &Buffers{
		Get: func(n int) []byte {
			b := make([]byte, n, n+1)
			c.mu.Lock()
			c.got += n
			c.out[&b[:n+1][n]] = true
			c.mu.Unlock()
			return b
		},
		Put: func(b []byte) {
			c.mu.Lock()
			defer c.mu.Unlock()
			k := &b[:cap(b)][cap(b)-1]
			if !c.out[k] {
				panic("a buffer put back twice or not from Get")
			}
			delete(c.out, k)
			c.back += cap(b) - 1
		},
	}
}

// TestBodyReadAsItArrives: on a stream that sent a header declaring 1 GiB
// and 1000 bytes and then holds still, the reader has taken from its
// Buffers only about what arrived; once the stream fails, every buffer
// went back. A body sent in full arrives whole, in a buffer of its own
// length, every other buffer given back.
func TestBodyReadAsItArrives(t *testing.T) {
	var cb countingBuffers
	bufs := cb.buffers()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := ReadFrameInto(pr, TypeBatch, MaxFrame, bufs)
		done <- err
	}()
	if _, err := pw.Write(append(header(TypeBatch, MaxFrame), make([]byte, 1000)...)); err != nil {
		t.Fatal(err)
	}
	// The write returned: the reader has consumed it and waits for more.
	cb.mu.Lock()
	held := cb.got - cb.back
	cb.mu.Unlock()
	t.Logf("header declaring %d bytes, 1000 sent, stream held open: %d bytes taken", MaxFrame, held)
	if held > 2*BodyStart {
		t.Fatalf("a held stream took %d bytes for 1000 sent", held)
	}
	pw.CloseWithError(errors.New("stream reset"))
	if err := <-done; err == nil {
		t.Fatal("a reset stream read")
	}
	if cb.got != cb.back || len(cb.out) != 0 {
		t.Fatalf("after a failed read %d bytes taken, %d back", cb.got, cb.back)
	}

	for _, n := range []int{0, 1, BodyStart - 1, BodyStart, BodyStart + 1, 5*BodyStart + 17} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i*7 + n)
		}
		var frame bytes.Buffer
		_ = WriteFrame(&frame, TypeBatch, body)
		var cb countingBuffers
		// One byte at a time: growth must not depend on the reads' sizes.
		got, err := ReadFrameInto(iotest.OneByteReader(&frame), TypeBatch, n, cb.buffers())
		if err != nil || !bytes.Equal(got, body) || len(got) != n {
			t.Fatalf("body of %d bytes: %d read, %v", n, len(got), err)
		}
		if len(cb.out) != 1 || cb.got-cb.back != n {
			t.Fatalf("body of %d bytes: %d buffers kept, %d bytes", n, len(cb.out), cb.got-cb.back)
		}
	}
}

// TestBodyCopiedOnce: a body above BodyStart is read into pieces that
// add up to half its length, then into one buffer of its length, so that
// half its length is copied (a buffer grown by doubling copied 1 to 2
// times it: 448 KiB for a body of 320 KiB). Every piece goes back; the
// body is whole.
func TestBodyCopiedOnce(t *testing.T) {
	for _, n := range []int{BodyStart + 1, 2 * BodyStart, 2*BodyStart + 1, 4*BodyStart + 64, 5*BodyStart + 17, 200*(256<<10+100) + 300} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i*7 + i>>16)
		}
		var frame bytes.Buffer
		_ = WriteFrame(&frame, TypeBatch, body)
		var cb countingBuffers
		got, err := ReadFrameInto(iotest.HalfReader(&frame), TypeBatch, n, cb.buffers())
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("body of %d bytes: %v, equal %v", n, err, bytes.Equal(got, body))
		}
		copied := cb.got - n // every buffer but the body's own, copied into it
		t.Logf("body of %d bytes: %d bytes copied (%.2f of it)", n, copied, float64(copied)/float64(n))
		if copied > n-n/2 || cb.back != copied || len(cb.out) != 1 {
			t.Fatalf("body of %d bytes: %d bytes copied, %d given back, %d buffers kept", n, copied, cb.back, len(cb.out))
		}
	}
}

// TestFrameToCallersBuffer: ReadFrameTo reads a body straight into the
// caller's buffer, every time the same memory, allocating next to nothing
// however large the body; a body above len(dst) or the cap is refused
// before it is read, a short one fails, and a refusal still reads whole.
func TestFrameToCallersBuffer(t *testing.T) {
	dst := make([]byte, 5*BodyStart+17)
	for _, n := range []int{0, 1, BodyStart + 1, len(dst)} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i*7 + n)
		}
		var frame bytes.Buffer
		_ = WriteFrame(&frame, TypeBatch, body)
		r := bytes.NewReader(frame.Bytes())
		var got []byte
		var err error
		a := allocBytes(func() {
			r.Reset(frame.Bytes())
			got, err = ReadFrameTo(iotest.HalfReader(r), TypeBatch, MaxFrame, dst)
		})
		if err != nil || !bytes.Equal(got, body) || (n > 0 && &got[0] != &dst[0]) {
			t.Fatalf("body of %d bytes into the caller's buffer: %v, equal %v", n, err, bytes.Equal(got, body))
		}
		if a > 4<<10 {
			t.Fatalf("body of %d bytes into the caller's buffer allocated %d bytes", n, a)
		}
	}
	over := append(header(TypeBatch, uint32(len(dst)+1)), make([]byte, len(dst)+1)...)
	if _, err := ReadFrameTo(bytes.NewReader(over), TypeBatch, MaxFrame, dst); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a body above the buffer: %v", err)
	}
	if _, err := ReadFrameTo(bytes.NewReader(over), TypeBatch, 100, dst); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a body above the cap: %v", err)
	}
	short := append(header(TypeBatch, 1000), make([]byte, 999)...)
	if _, err := ReadFrameTo(bytes.NewReader(short), TypeBatch, MaxFrame, dst); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short body: %v", err)
	}
	var refusal bytes.Buffer
	_ = WriteError(&refusal, errors.New("no"))
	if _, err := ReadFrameTo(&refusal, TypeBatch, MaxFrame, dst); err == nil || err.Error() != "peer refused: no" {
		t.Fatalf("a refusal: %v", err)
	}
}

// FuzzReadBody: a frame read in pieces of any size, with recycled
// buffers that hold stale bytes, reads the same as in one piece.
func FuzzReadBody(f *testing.F) {
	f.Add(uint32(10), []byte("0123456789"), uint8(1))
	f.Add(uint32(BodyStart+3), bytes.Repeat([]byte{7}, BodyStart+3), uint8(0))
	f.Add(uint32(1<<20), []byte("short"), uint8(2))
	f.Fuzz(func(t *testing.T, n uint32, sent []byte, mode uint8) {
		if n > 4*BodyStart {
			n %= 4 * BodyStart
		}
		in := append(header(TypeHello, n), sent...)
		var r io.Reader = bytes.NewReader(in)
		switch mode % 3 {
		case 1:
			r = iotest.OneByteReader(r)
		case 2:
			r = iotest.HalfReader(r)
		}
		dirty := &Buffers{Get: func(k int) []byte { return bytes.Repeat([]byte{0xee}, k) }}
		body, err := ReadFrameInto(r, TypeHello, 4*BodyStart, dirty)
		if int(n) > len(sent) {
			if err == nil {
				t.Fatalf("a body of %d bytes read from %d", n, len(sent))
			}
			return
		}
		if err != nil || !bytes.Equal(body, sent[:n]) {
			t.Fatalf("body of %d bytes: %v", n, err)
		}
	})
}
