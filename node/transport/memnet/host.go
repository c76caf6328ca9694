package memnet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/node/transport"
)

// Host is one host of a Net.
type Host struct {
	net   *Net
	id    peer.ID
	addrs []ma.Multiaddr
	from  ma.Multiaddr // the address its connections come from

	// mu guards the fields below.
	mu        sync.Mutex
	closed    bool
	handlers  map[protocol.ID]transport.Handler
	conns     map[peer.ID]*conn
	book      map[peer.ID][]ma.Multiaddr
	protected map[peer.ID]bool
	onDown    []func(peer.ID)
}

var _ transport.Host = (*Host)(nil)

// ID implements transport.Host.
func (h *Host) ID() peer.ID { return h.id }

// Addrs implements transport.Host.
func (h *Host) Addrs() []ma.Multiaddr { return append([]ma.Multiaddr(nil), h.addrs...) }

// AddAddrs implements transport.Host; the ttl is not enforced.
func (h *Host) AddAddrs(p peer.ID, addrs []ma.Multiaddr, _ time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	have := h.book[p]
next:
	for _, a := range addrs {
		// As libp2p's peerstore: a /p2p/ suffix names the peer, not a place.
		if t, _ := peer.SplitAddr(a); t != nil {
			a = t
		}
		for _, b := range have {
			if a.Equal(b) {
				continue next
			}
		}
		have = append(have, a)
	}
	h.book[p] = have
}

// Connected implements transport.Host.
func (h *Host) Connected(p peer.ID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[p] != nil
}

// RemoteAddrs implements transport.Host.
func (h *Host) RemoteAddrs(p peer.ID) []ma.Multiaddr {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.conns[p]
	if c == nil {
		return nil
	}
	return []ma.Multiaddr{c.other(h).from}
}

// OnDisconnect implements transport.Host.
func (h *Host) OnDisconnect(f func(peer.ID)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onDown = append(h.onDown, f)
}

// Protect implements transport.Host (nothing trims an in-memory network).
func (h *Host) Protect(p peer.ID, _ string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.protected[p] = true
}

// Unprotect implements transport.Host.
func (h *Host) Unprotect(p peer.ID, _ string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.protected, p)
}

// SetStreamHandler implements transport.Host.
func (h *Host) SetStreamHandler(proto protocol.ID, f transport.Handler) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handlers[proto] = f
}

// Close implements transport.Host: every connection closes, every stream
// on it is reset, and the host leaves the network.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	cs := make([]*conn, 0, len(h.conns))
	for _, c := range h.conns {
		cs = append(cs, c)
	}
	h.mu.Unlock()
	h.net.remove(h)
	for _, c := range cs {
		c.close()
	}
	return nil
}

// Connect implements transport.Host.
func (h *Host) Connect(ctx context.Context, ai peer.AddrInfo) error {
	if len(ai.Addrs) > 0 {
		h.AddAddrs(ai.ID, ai.Addrs, 0)
	}
	_, err := h.dial(ctx, ai.ID)
	return err
}

// dial returns the connection to p, opening it if needed: one round trip.
func (h *Host) dial(ctx context.Context, p peer.ID) (*conn, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrHostDown
	}
	if c := h.conns[p]; c != nil {
		h.mu.Unlock()
		return c, nil
	}
	addrs := append([]ma.Multiaddr(nil), h.book[p]...)
	h.mu.Unlock()
	if p == h.id {
		return nil, fmt.Errorf("memnet: dial to self")
	}
	l, cut := h.net.link(h.id, p)
	if cut {
		// A black hole: the dial times out, after its context or libp2p's
		// dial timeout, whichever comes first.
		t := time.NewTimer(DialTimeout)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, &peerErr{"dial", p, nil, ctx.Err()}
		case <-t.C:
			return nil, &peerErr{"dial", p, nil, ErrDialTimeout}
		}
	}
	if err := sleep(ctx, 2*l.Latency); err != nil {
		return nil, &peerErr{"dial", p, nil, err}
	}
	r := h.net.resolve(p, addrs)
	if r == nil {
		return nil, &peerErr{"dial", p, addrs, transport.ErrNoRoute}
	}
	// Lock order: lower id first, so that two dials across cannot
	// deadlock.
	a, b := h, r
	if b.id < a.id {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
	defer a.mu.Unlock()
	defer b.mu.Unlock()
	if h.closed || r.closed {
		return nil, &peerErr{"dial", p, nil, ErrHostDown}
	}
	if c := h.conns[p]; c != nil {
		return c, nil
	}
	c := &conn{a: h, b: r, streams: map[*stream]bool{}}
	h.conns[p] = c
	r.conns[h.id] = c
	return c, nil
}

// NewStream implements transport.Host.
func (h *Host) NewStream(ctx context.Context, p peer.ID, proto protocol.ID) (transport.Stream, error) {
	c, err := h.dial(ctx, p)
	if err != nil {
		return nil, err
	}
	r := c.other(h)
	r.mu.Lock()
	fn := r.handlers[proto]
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, &peerErr{"stream to", p, nil, ErrHostDown}
	}
	if fn == nil {
		return nil, &peerErr{string(proto) + " at", p, nil, ErrNoProto}
	}
	out, in := c.newStreams(h, proto)
	if out == nil {
		return nil, &peerErr{"stream to", p, nil, ErrReset}
	}
	l, _ := h.net.link(h.id, p)
	if h.net.lossDraw(l.Loss) {
		time.AfterFunc(l.Latency, func() { out.Reset() })
	}
	go fn(in)
	return out, nil
}

// conn is the one connection between two hosts.
type conn struct {
	a, b *Host

	mu      sync.Mutex
	closed  bool
	streams map[*stream]bool
	ab, ba  lane // bandwidth of each direction
}

func (c *conn) other(h *Host) *Host {
	if h == c.a {
		return c.b
	}
	return c.a
}

// newStreams opens a stream from h: h's end and the other's.
func (c *conn) newStreams(h *Host, proto protocol.ID) (*stream, *stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil
	}
	r := c.other(h)
	lout, _ := h.net.link(h.id, r.id)
	lin, _ := h.net.link(r.id, h.id)
	fwd, back := &c.ab, &c.ba
	if h == c.b {
		fwd, back = back, fwd
	}
	toR := newPipe(lout, fwd)
	toH := newPipe(lin, back)
	out := &stream{conn: c, remote: r.id, in: toH, out: toR, proto: proto, opener: true, reqType: -1}
	in := &stream{conn: c, remote: h.id, in: toR, out: toH, proto: proto, net: h.net, local: r.id}
	out.peer, in.peer = in, out
	c.streams[out], c.streams[in] = true, true
	return out, in
}

func (c *conn) forget(s *stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.streams, s)
}

// close resets every stream and tells both hosts the connection is gone.
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	ss := make([]*stream, 0, len(c.streams))
	for s := range c.streams {
		ss = append(ss, s)
	}
	clear(c.streams)
	c.mu.Unlock()
	for _, s := range ss {
		s.in.fail(ErrReset)
		s.out.fail(ErrReset)
	}
	for _, h := range []*Host{c.a, c.b} {
		o := c.other(h)
		h.mu.Lock()
		if h.conns[o.id] == c {
			delete(h.conns, o.id)
		}
		fs := append([]func(peer.ID){}, h.onDown...)
		closed := h.closed
		h.mu.Unlock()
		if closed {
			continue
		}
		for _, f := range fs {
			go f(o.id)
		}
	}
}

// peerErr is "memnet: <what> <peer>[ at <addrs>]: <err>", formatted only
// when read: a peer id's base58 cost more than the failed dial itself
// where a roster held hundreds of ids that never answer.
type peerErr struct {
	what string
	p    peer.ID
	at   []ma.Multiaddr
	err  error
}

func (e *peerErr) Error() string {
	if e.at != nil {
		return fmt.Sprintf("memnet: %s %s at %v: %v", e.what, e.p.ShortString(), e.at, e.err)
	}
	return fmt.Sprintf("memnet: %s %s: %v", e.what, e.p.ShortString(), e.err)
}

func (e *peerErr) Unwrap() error { return e.err }
