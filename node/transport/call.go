package transport

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
)

// ProtocolVersion is carried in Hello: the wire version, the number in
// the protocol ids above.
const ProtocolVersion = 1

// DesignVersion is the version of docs/protocol.md that the code
// implements (its "version 3"). Its second and third versions changed checks
// and behaviour, not encodings, so the wire version stayed 1.
const DesignVersion = 3

// Deadlines. Every stream gets one; long polls get the longest. Both ends
// of a stream count on them, so they are protocol rules, not Tunables.
const (
	ShortTimeout = 20 * time.Second  // request/response between live peers
	BulkTimeout  = 120 * time.Second // batches and padded answers of a round
	PollTimeout  = 10 * time.Minute  // a client waiting for the next epoch or round
)

// Stream buffers are pooled: a round opens a few streams per client, and a
// fresh pair of 64 KiB buffers for each showed in the profiles.
var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}
)

func getReader(r io.Reader) *bufio.Reader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func putReader(br *bufio.Reader) { br.Reset(nil); readerPool.Put(br) }

func getWriter(w io.Writer) *bufio.Writer {
	bw := writerPool.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

func putWriter(bw *bufio.Writer) { bw.Reset(nil); writerPool.Put(bw) }

// countingWriter counts the bytes that reach the stream.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// Request is one call to a peer: a request frame and how long to wait.
// The reply's type and size cap come from ReplyTo, by protocol and request
// type, unless Max overrides the cap.
type Request struct {
	Proto protocol.ID
	Type  wire.Type
	// Body is the request body; Segments, if set, replace it (the bulk
	// messages' Segments, written to the stream without being joined).
	Body     []byte
	Segments [][]byte
	Timeout  time.Duration
	// Max, if not zero, is the reply's cap where it depends on the epoch
	// (a PIR answer: k rows of b bytes).
	Max int
	// Sent, if set, is told the bytes written to the stream for the
	// request (the wire-size equality test, §1: sizes never depend on what
	// a user does).
	Sent func(t wire.Type, n int)
	// Bufs, if set, gives the buffers the reply is read into.
	Bufs *wire.Buffers
	// Into, if set, is the caller's buffer the reply is read straight
	// into (wire.ReadFrameTo; the cap is at most len(Into)), instead of
	// Bufs.
	Into []byte
}

// BodySegments is the request body as segments.
func (r *Request) BodySegments() [][]byte {
	if r.Segments != nil {
		return r.Segments
	}
	return [][]byte{r.Body}
}

// Call opens a stream to p, sends one request frame and reads one reply of
// the type and at most the size that ReplyTo gives. The stream is reset on
// any error.
func Call(ctx context.Context, h Host, p peer.ID, r Request) ([]byte, error) {
	want, max, err := ReplyTo(r.Proto, r.Type)
	if err != nil {
		return nil, err
	}
	if r.Max != 0 {
		max = r.Max
	}
	if max <= 0 {
		return nil, fmt.Errorf("node: no reply cap for %s message %d", r.Proto, r.Type)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	s, err := h.NewStream(ctx, p, r.Proto)
	if err != nil {
		return nil, &callErr{"open ", r.Proto, p, "", err}
	}
	dl, _ := ctx.Deadline()
	_ = s.SetDeadline(dl)
	// Abort the stream when the context ends, so that a long poll stops
	// with its caller.
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	cw := &countingWriter{w: s}
	bw := getWriter(cw)
	err = wire.WriteFrameSegments(bw, r.Type, r.BodySegments())
	if err == nil {
		err = bw.Flush()
	}
	putWriter(bw)
	if r.Sent != nil {
		r.Sent(r.Type, cw.n)
	}
	if err != nil {
		s.Reset()
		return nil, &callErr{"", r.Proto, p, "", err}
	}
	if err := s.CloseWrite(); err != nil {
		s.Reset()
		return nil, &callErr{"", r.Proto, p, ": close write", err}
	}
	br := getReader(s)
	var rep []byte
	if r.Into != nil {
		rep, err = wire.ReadFrameTo(br, want, max, r.Into)
	} else {
		rep, err = wire.ReadFrameInto(br, want, max, r.Bufs)
	}
	putReader(br)
	if err != nil {
		s.Reset()
		return nil, &callErr{"", r.Proto, p, "", err}
	}
	hookRecv(h, want, rep)
	s.Close()
	return rep, nil
}

// callErr is "[open ]<proto> to <peer>[: close write]: <err>", formatted
// only when read: most failed calls' errors are dropped, and a peer id's
// base58 cost more than a failed in-memory dial.
type callErr struct {
	pre   string
	proto protocol.ID
	p     peer.ID
	post  string
	err   error
}

func (e *callErr) Error() string {
	return fmt.Sprintf("%s%s to %s%s: %v", e.pre, e.proto, e.p.ShortString(), e.post, e.err)
}

func (e *callErr) Unwrap() error { return e.err }

// HandlerFunc answers one request; it returns the reply type and body.
type HandlerFunc func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error)

// SegHandlerFunc is a HandlerFunc whose reply body is segments (a bulk
// reply written without being joined: PIR answers).
type SegHandlerFunc func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, [][]byte, error)

// Gate tracks the stream handlers in flight, so that Close waits for them
// before it closes the store and erases secrets (libp2p runs handlers on
// its own goroutines).
type Gate struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Enter admits a handler; false once the gate is closed.
func (g *Gate) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

func (g *Gate) Leave() { g.wg.Done() }

// Close refuses new handlers and waits for those in flight.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// ReplyBound bounds the send of every reply of a protocol: the stream
// ends Base plus a second per Rate bytes of the reply after the handler
// returns, if that comes before the protocol's deadline. A peer that asks
// and never reads then holds its stream, its handler and whatever slot
// the handler took for seconds, not for the whole deadline (a client
// poll's 10 min). The zero bound adds nothing.
type ReplyBound struct {
	Base time.Duration
	Rate int // bytes a second; 0: no bound
}

// within is how long a reply of n bytes may take to send.
func (b ReplyBound) within(n int) time.Duration {
	return b.Base + time.Duration(n)*time.Second/time.Duration(b.Rate)
}

// Serve installs a request/response handler for proto with per-type caps.
func Serve(ctx context.Context, h Host, g *Gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, caps func(peer.ID, wire.Type) int, fn HandlerFunc) {
	ServePooled(ctx, h, g, log, proto, timeout, caps, nil, fn)
}

// ServePooled is Serve with request bodies read into buffers from bufs
// (the server's BufPool; nil: new slices): a handler that is done with a
// body may give it back.
func ServePooled(ctx context.Context, h Host, g *Gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, caps func(peer.ID, wire.Type) int, bufs *wire.Buffers, fn HandlerFunc) {
	ServeSegments(ctx, h, g, log, proto, timeout, caps, bufs, func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, [][]byte, error) {
		rt, rep, err := fn(ctx, from, t, body)
		return rt, [][]byte{rep}, err
	})
}

// ServeSegments is Serve for a handler whose replies are segments; bufs,
// if set, provides the request bodies' buffers. A body is read as its
// bytes arrive (wire.BodyStart): a header alone reserves nothing big,
// whatever the sender's cap.
func ServeSegments(ctx context.Context, h Host, g *Gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, caps func(peer.ID, wire.Type) int, bufs *wire.Buffers, fn SegHandlerFunc) {
	ServeBounded(ctx, h, g, log, proto, timeout, ReplyBound{}, caps, bufs, fn)
}

// ServeBounded is ServeSegments whose replies' sends end within bound.
func ServeBounded(ctx context.Context, h Host, g *Gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, bound ReplyBound, caps func(peer.ID, wire.Type) int, bufs *wire.Buffers, fn SegHandlerFunc) {
	ServeBoundedBy(ctx, h, g, log, proto, timeout, func(wire.Type) ReplyBound { return bound }, caps, bufs, fn)
}

// ServeBoundedBy is ServeBounded with the bound of each reply by its
// request's type (a protocol whose bulk replies keep the stream's
// deadline while its small ones end early).
func ServeBoundedBy(ctx context.Context, h Host, g *Gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, bounds func(wire.Type) ReplyBound, caps func(peer.ID, wire.Type) int, bufs *wire.Buffers, fn SegHandlerFunc) {
	h.SetStreamHandler(proto, func(s Stream) {
		if !g.Enter() {
			s.Reset()
			return
		}
		defer g.Leave()
		end := time.Now().Add(timeout)
		_ = s.SetDeadline(end)
		from := s.RemotePeer()
		br := getReader(s)
		t, body, rerr := wire.ReadAnyInto(br, func(t wire.Type) int { return caps(from, t) }, bufs)
		putReader(br)
		if rerr != nil {
			log.Debug("bad request", "proto", proto, "err", rerr)
			s.Reset()
			return
		}
		// Guarded by the constant: a call in a closure of an inlined
		// function is not always inlined, even to an empty one.
		if hooksBuilt {
			hookRecv(h, t, body)
		}
		sctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		rt, rep, ferr := fn(sctx, from, t, body)
		if bound := bounds(t); bound.Rate > 0 {
			n := wire.HeaderSize
			if ferr != nil {
				n += len(ferr.Error())
			}
			for _, b := range rep {
				n += len(b)
			}
			if dl := time.Now().Add(bound.within(n)); dl.Before(end) {
				_ = s.SetDeadline(dl)
			}
		}
		bw := getWriter(s)
		defer putWriter(bw)
		var err error
		if ferr != nil {
			log.Debug("request refused", "proto", proto, "type", t, "err", ferr)
			err = wire.WriteError(bw, ferr)
		} else {
			err = wire.WriteFrameSegments(bw, rt, rep)
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			s.Reset()
			return
		}
		s.Close()
	})
}
