// Package memnet is an in-memory network for riffle's transport seam: hosts
// in one process, joined by links with latency, bandwidth and loss, which a
// test can partition, heal and crash. Every wait is a channel or a timer, so
// a network inside a testing/synctest bubble runs in virtual time: a round
// limit of ten seconds costs nothing while everything waits.
//
// Semantics follow libp2p's (transport.Stream): one connection per pair of
// hosts, opened by a dial and closed when either host closes; a stream's
// CloseWrite gives the peer EOF, Reset fails both ends, a deadline fails
// reads and writes after it; a writer blocks while Window bytes are in
// flight. A dial to a partitioned peer hangs until DialTimeout or its
// context ends, as a dial into a black hole does.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/node/transport"
)

// Link is what one direction of a connection costs.
type Link struct {
	Latency   time.Duration // one way, added to every write's delivery
	Bandwidth int64         // bytes per second; 0: unlimited
	// Loss is the probability that a stream opened over the link is reset
	// by the network one latency after it opens.
	Loss float64
	// Window, if not zero, replaces the package's Window for streams
	// written over the link: a small one plays a peer that reads slowly
	// or not at all, whose writer then blocks until its deadline.
	Window int
}

// Window is how many bytes a stream's writer may have in flight before a
// write blocks (libp2p's yamux window is of this order).
const Window = 16 << 20

// DialTimeout bounds a dial that gets no answer, as libp2p's swarm does.
const DialTimeout = 15 * time.Second

// Errors of the network, as a libp2p stream would give them.
var (
	ErrReset    = errors.New("memnet: stream reset")
	ErrClosed   = errors.New("memnet: stream closed")
	ErrDeadline = errors.New("memnet: i/o deadline reached")
	ErrNoProto  = errors.New("memnet: protocol not supported")
	ErrHostDown = errors.New("memnet: host closed")
	// ErrDialTimeout is a dial into a partition that gave up.
	ErrDialTimeout = errors.New("memnet: dial timed out")
)

// Net is an in-memory network. Its zero value is not usable: call New.
type Net struct {
	mu     sync.Mutex
	hosts  map[peer.ID]*Host
	byAddr map[string]peer.ID
	port   int
	def    Link
	links  map[[2]peer.ID]Link // by (from, to)
	cut    map[[2]peer.ID]bool // unordered pairs, lower id first
	rnd    *rand.Rand
	// loseReply, if set, is asked once per stream when its server end
	// first writes: true resets the stream instead, so that the request
	// was taken and its reply lost.
	loseReply func(server, client peer.ID, proto protocol.ID, reqType byte) bool
}

// New returns an empty network whose links cost def unless SetLink says
// otherwise; seed drives the draws of loss.
func New(def Link, seed uint64) *Net {
	return &Net{hosts: map[peer.ID]*Host{}, byAddr: map[string]peer.ID{}, port: 10000, def: def,
		links: map[[2]peer.ID]Link{}, cut: map[[2]peer.ID]bool{}, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// SetLink sets the link from a to b (one direction).
func (n *Net) SetLink(a, b peer.ID, l Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.links[[2]peer.ID{a, b}] = l
}

// SetDefault sets the link of every pair without one of its own.
func (n *Net) SetDefault(l Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.def = l
}

func pair(a, b peer.ID) [2]peer.ID {
	if b < a {
		a, b = b, a
	}
	return [2]peer.ID{a, b}
}

// Partition cuts every link between a host of a and a host of b: their
// connections close and dials between them time out until Heal.
func (n *Net) Partition(a, b []peer.ID) {
	var drop []*conn
	n.mu.Lock()
	for _, x := range a {
		for _, y := range b {
			if x == y {
				continue
			}
			n.cut[pair(x, y)] = true
			if h := n.hosts[x]; h != nil {
				h.mu.Lock()
				if c := h.conns[y]; c != nil {
					drop = append(drop, c)
				}
				h.mu.Unlock()
			}
		}
	}
	n.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
}

// LoseReplies makes f decide, for each stream, whether the reply is lost
// after the request was taken (the first byte a riffle request writes is
// its message type); nil stops it.
func (n *Net) LoseReplies(f func(server, client peer.ID, proto protocol.ID, reqType byte) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loseReply = f
}

func (n *Net) replyLost(server, client peer.ID, proto protocol.ID, reqType byte) bool {
	n.mu.Lock()
	f := n.loseReply
	n.mu.Unlock()
	return f != nil && f(server, client, proto, reqType)
}

// Heal removes every partition.
func (n *Net) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
}

// Crash drops every connection and stream of p at once and takes it off
// the network, as kill -9 does; its addresses are free again.
func (n *Net) Crash(p peer.ID) {
	n.mu.Lock()
	h := n.hosts[p]
	n.mu.Unlock()
	if h != nil {
		h.Close()
	}
}

// Hosts returns the ids of the hosts on the network.
func (n *Net) Hosts() []peer.ID {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]peer.ID, 0, len(n.hosts))
	for id := range n.hosts {
		out = append(out, id)
	}
	return out
}

// link returns the link from a to b and whether it is cut.
func (n *Net) link(a, b peer.ID) (Link, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.links[[2]peer.ID{a, b}]
	if !ok {
		l = n.def
	}
	return l, n.cut[pair(a, b)]
}

func (n *Net) lossDraw(p float64) bool {
	if p <= 0 {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rnd.Float64() < p
}

// NewHost implements transport.Network. A listen address with port 0 gets
// a free port of the network's own; an address in use is refused. Its
// connections come from 127.0.0.1.
func (n *Net) NewHost(priv crypto.PrivKey, listen []string) (transport.Host, error) {
	return n.NewHostFrom(priv, listen, nil)
}

// NewHostFrom is NewHost for a host whose connections come from ip (nil:
// 127.0.0.1; IPv4 or IPv6), as a peer of another address range looks to
// the hosts it dials.
func (n *Net) NewHostFrom(priv crypto.PrivKey, listen []string, ip net.IP) (transport.Host, error) {
	from := "/ip4/127.0.0.1"
	if ip4 := ip.To4(); ip4 != nil {
		from = "/ip4/" + ip4.String()
	} else if ip != nil && len(ip) == net.IPv6len {
		from = "/ip6/" + ip.String()
	} else if ip != nil {
		return nil, fmt.Errorf("memnet: source address %v is neither IPv4 nor IPv6", ip)
	}
	if priv == nil {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			return nil, fmt.Errorf("memnet: key: %w", err)
		}
		priv = k
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("memnet: peer id: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hosts[id] != nil {
		return nil, fmt.Errorf("memnet: host %s is already on the network", id.ShortString())
	}
	h := &Host{net: n, id: id, handlers: map[protocol.ID]transport.Handler{}, conns: map[peer.ID]*conn{},
		book: map[peer.ID][]ma.Multiaddr{}, protected: map[peer.ID]bool{}}
	for _, l := range listen {
		a, err := n.bindLocked(l)
		if err != nil {
			for _, b := range h.addrs {
				delete(n.byAddr, string(b.Bytes()))
			}
			return nil, err
		}
		h.addrs = append(h.addrs, a)
		n.byAddr[string(a.Bytes())] = id
	}
	h.from = ma.StringCast(fmt.Sprintf("%s/tcp/%d", from, n.nextPortLocked()))
	n.hosts[id] = h
	return h, nil
}

func (n *Net) nextPortLocked() int {
	for {
		n.port++
		if _, used := n.byAddr[string(ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", n.port)).Bytes())]; !used {
			return n.port
		}
	}
}

// bindLocked resolves a listen address: port 0 becomes a free port.
func (n *Net) bindLocked(l string) (ma.Multiaddr, error) {
	a, err := ma.NewMultiaddr(l)
	if err != nil {
		return nil, fmt.Errorf("memnet: listen address %q: %w", l, err)
	}
	var out ma.Multiaddr
	for _, c := range a {
		switch c.Protocol().Code {
		case ma.P_TCP, ma.P_UDP:
			if c.Value() == "0" {
				nc, err := ma.NewComponent(c.Protocol().Name, fmt.Sprint(n.nextPortLocked()))
				if err != nil {
					return nil, err
				}
				c = *nc
			}
		}
		out = append(out, c)
	}
	if _, used := n.byAddr[string(out.Bytes())]; used {
		return nil, fmt.Errorf("memnet: listen on %s: address already in use", out)
	}
	return out, nil
}

// resolve finds the live host p at one of addrs.
func (n *Net) resolve(p peer.ID, addrs []ma.Multiaddr) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range addrs {
		if n.byAddr[string(a.Bytes())] == p {
			return n.hosts[p]
		}
	}
	return nil
}

func (n *Net) remove(h *Host) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hosts[h.id] == h {
		delete(n.hosts, h.id)
	}
	for _, a := range h.addrs {
		if n.byAddr[string(a.Bytes())] == h.id {
			delete(n.byAddr, string(a.Bytes()))
		}
	}
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
