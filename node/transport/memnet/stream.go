package memnet

import (
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// lane is one direction of a connection: its bytes leave one after the
// other at the link's bandwidth.
type lane struct {
	mu   sync.Mutex
	free time.Time // when the last byte queued has left
}

// reserve queues n bytes and returns when the last of them has left.
func (l *lane) reserve(n int, bw int64) time.Time {
	now := time.Now()
	if bw <= 0 {
		return now
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	start := l.free
	if start.Before(now) {
		start = now
	}
	l.free = start.Add(time.Duration(float64(n) / float64(bw) * float64(time.Second)))
	return l.free
}

// seg is a write, readable from at.
type seg struct {
	b   []byte
	at  time.Time
	buf *[]byte // b's pooled backing (segPools), nil if not pooled
}

// Segments copy what a writer gives (it may reuse its buffer once Write
// returns) into buffers kept in pools by size, given back once read: a
// fresh copy each was nearly a quarter of the bytes an adversary test at the
// default parameters allocated. A write longer than segMax is cut into
// segments of segMax bytes.
const (
	segMin = 256      // smaller copies are cheap to allocate
	segMax = 64 << 10 // the largest pooled buffer
)

// segPools holds free segment buffers by class: class c holds buffers of
// segMin<<c bytes.
var segPools [9]sync.Pool // segMin<<8 = segMax

func segClass(n int) int {
	c := 0
	for segMin<<c < n {
		c++
	}
	return c
}

// newSeg copies b (at most segMax bytes) into a segment readable from at.
func newSeg(b []byte, at time.Time) seg {
	if len(b) < segMin {
		return seg{b: append([]byte(nil), b...), at: at}
	}
	c := segClass(len(b))
	buf, _ := segPools[c].Get().(*[]byte)
	if buf == nil {
		nb := make([]byte, segMin<<c)
		buf = &nb
	}
	return seg{b: (*buf)[:copy(*buf, b)], at: at, buf: buf}
}

// release gives a segment's buffer back once nothing reads it.
func (s *seg) release() {
	if s.buf != nil {
		segPools[segClass(cap(*s.buf))].Put(s.buf)
	}
	*s = seg{}
}

// dropSegsLocked releases every segment not yet read.
func (p *pipe) dropSegsLocked() {
	for i := range p.segs {
		p.segs[i].release()
	}
	p.segs, p.size = nil, 0
}

// pipe is one direction of a stream.
type pipe struct {
	link Link
	lane *lane

	mu      sync.Mutex
	segs    []seg
	size    int       // bytes in segs
	eof     bool      // the writer closed
	rclosed bool      // the reader closed: writes fail
	err     error     // reset
	rdl     time.Time // the reader's deadline
	wdl     time.Time // the writer's deadline
	wake    chan struct{}
	waited  bool // wake was handed to a waiter
	spare   *time.Timer
}

func newPipe(l Link, ln *lane) *pipe {
	return &pipe{link: l, lane: ln, wake: make(chan struct{})}
}

// signalLocked wakes every waiter. A wake nobody waits on stays: every
// read and write signals, and a channel each was a sixteenth of the
// objects a full-size epoch of node's tests allocated.
func (p *pipe) signalLocked() {
	if !p.waited {
		return
	}
	close(p.wake)
	p.wake, p.waited = make(chan struct{}), false
}

// waitChLocked is the channel the next signal closes.
func (p *pipe) waitChLocked() chan struct{} {
	p.waited = true
	return p.wake
}

// wait blocks until ch closes or d passes (d ≤ 0: no timer), on t if
// not nil, and returns the timer it used.
func wait(ch chan struct{}, d time.Duration, t *time.Timer) *time.Timer {
	if d <= 0 {
		<-ch
		return t
	}
	if t == nil {
		t = time.NewTimer(d)
	} else {
		t.Reset(d)
	}
	select {
	case <-ch:
		t.Stop()
	case <-t.C:
	}
	return t
}

// takeTimerLocked hands a wait the pipe's spare timer (nil if none):
// most reads wait out the link's latency, and a timer each was a fifth of
// the timers an epoch of node's tests made.
func (p *pipe) takeTimerLocked() *time.Timer {
	t := p.spare
	p.spare = nil
	return t
}

// putTimerLocked keeps t as the pipe's spare timer.
func (p *pipe) putTimerLocked(t *time.Timer) {
	if t != nil {
		p.spare = t
	}
}

func untilDeadline(dl, now time.Time, d time.Duration) time.Duration {
	if dl.IsZero() {
		return d
	}
	left := dl.Sub(now)
	if d <= 0 || left < d {
		return left
	}
	return d
}

func (p *pipe) read(b []byte) (int, error) {
	var t *time.Timer
	for {
		p.mu.Lock()
		p.putTimerLocked(t)
		if p.err != nil {
			p.mu.Unlock()
			return 0, p.err
		}
		if p.rclosed {
			p.mu.Unlock()
			return 0, ErrClosed
		}
		now := time.Now()
		if !p.rdl.IsZero() && !now.Before(p.rdl) {
			p.mu.Unlock()
			return 0, ErrDeadline
		}
		if len(p.segs) > 0 && !p.segs[0].at.After(now) {
			n := 0
			for len(p.segs) > 0 && n < len(b) && !p.segs[0].at.After(now) {
				c := copy(b[n:], p.segs[0].b)
				n += c
				p.segs[0].b = p.segs[0].b[c:]
				if len(p.segs[0].b) == 0 {
					p.segs[0].release()
					p.segs = p.segs[1:]
				}
			}
			p.size -= n
			p.signalLocked()
			p.mu.Unlock()
			return n, nil
		}
		if len(p.segs) == 0 && p.eof {
			p.mu.Unlock()
			return 0, io.EOF
		}
		var d time.Duration
		if len(p.segs) > 0 {
			d = p.segs[0].at.Sub(now)
		}
		d = untilDeadline(p.rdl, now, d)
		ch := p.waitChLocked()
		t = p.takeTimerLocked()
		p.mu.Unlock()
		t = wait(ch, d, t)
	}
}

func (p *pipe) write(b []byte) (int, error) {
	total := 0
	var t *time.Timer
	for len(b) > 0 {
		p.mu.Lock()
		p.putTimerLocked(t)
		if p.err != nil {
			p.mu.Unlock()
			return total, p.err
		}
		if p.eof || p.rclosed {
			p.mu.Unlock()
			return total, ErrClosed
		}
		now := time.Now()
		if !p.wdl.IsZero() && !now.Before(p.wdl) {
			p.mu.Unlock()
			return total, ErrDeadline
		}
		win := Window
		if p.link.Window > 0 {
			win = p.link.Window
		}
		if p.size >= win {
			d := untilDeadline(p.wdl, now, 0)
			ch := p.waitChLocked()
			t = p.takeTimerLocked()
			p.mu.Unlock()
			t = wait(ch, d, t)
			continue
		}
		n := min(len(b), win-p.size)
		at := p.lane.reserve(n, p.link.Bandwidth).Add(p.link.Latency)
		for i := 0; i < n; i += segMax {
			p.segs = append(p.segs, newSeg(b[i:min(n, i+segMax)], at))
		}
		p.size += n
		p.signalLocked()
		p.mu.Unlock()
		b = b[n:]
		total += n
	}
	return total, nil
}

func (p *pipe) closeWrite() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eof = true
	p.signalLocked()
}

func (p *pipe) closeRead() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rclosed = true
	p.dropSegsLocked()
	p.signalLocked()
}

func (p *pipe) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	p.dropSegsLocked()
	p.signalLocked()
}

func (p *pipe) setReadDeadline(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rdl = t
	p.signalLocked()
}

func (p *pipe) setWriteDeadline(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wdl = t
	p.signalLocked()
}

// stream is one end of a stream: it reads in and writes out, and the
// other end the reverse.
type stream struct {
	conn    *conn
	remote  peer.ID
	in, out *pipe
	peer    *stream
	proto   protocol.ID
	opener  bool
	reqType int // the opener's: the first byte it wrote, -1 before

	// The server end asks its network, at its first write, whether the
	// reply is lost (Net.LoseReplies).
	net     *Net
	local   peer.ID
	written bool
}

func (s *stream) Read(b []byte) (int, error) {
	n, err := s.in.read(b)
	if n > 0 && !s.opener && s.peer.reqType < 0 {
		s.peer.reqType = int(b[0])
	}
	return n, err
}

func (s *stream) Write(b []byte) (int, error) {
	if !s.opener && !s.written {
		s.written = true
		if t := s.peer.reqType; t >= 0 && s.net.replyLost(s.local, s.remote, s.proto, byte(t)) {
			s.Reset()
			return 0, ErrReset
		}
	}
	return s.out.write(b)
}
func (s *stream) RemotePeer() peer.ID { return s.remote }

func (s *stream) CloseWrite() error {
	s.out.closeWrite()
	return nil
}

func (s *stream) Close() error {
	s.out.closeWrite()
	s.in.closeRead()
	s.conn.forget(s)
	return nil
}

func (s *stream) Reset() error {
	s.in.fail(ErrReset)
	s.out.fail(ErrReset)
	s.conn.forget(s)
	s.conn.forget(s.peer)
	return nil
}

func (s *stream) SetDeadline(t time.Time) error {
	s.in.setReadDeadline(t)
	s.out.setWriteDeadline(t)
	return nil
}
