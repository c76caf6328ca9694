// Package transport is the seam between riffle's servers and clients and
// the network that carries their streams (docs/protocol.md §3). A Host opens
// and serves request/response streams by protocol id; node speaks only to
// this interface. Two networks implement it: libp2p (TCP and QUIC, TLS 1.3
// or Noise, yamux; Libp2p), what the binary runs, and an in-memory network
// with latency, bandwidth, loss, partitions and crashes (package memnet),
// which tests run in virtual time. One conformance test runs against both.
//
// Over a Host, the package holds node's one call path and one serve path
// (docs/protocol.md §3, the framing and deadlines of docs/proto-node.md):
//   - transport.go: the Host and Stream seam, the protocol ids.
//   - call.go: the protocol and design versions, the deadlines, the
//     stream framing (pooled buffers), Call (one request, one reply) and
//     Serve (a handler per protocol behind a Gate that Close waits on).
//   - bufpool.go: the recycled large buffers of a round (BufPool): the
//     frame bodies a server reads (ServePooled) and the answers it pads.
//   - caps.go: each protocol's read caps, replies and accepted types, from
//     internal/wire's message table at the server's ceilings.
//   - hooks.go, hooks_riffletest.go: the receive path's test hook
//     (RecvHook), built only with the tag riffletest.
//   - libp2p.go, dialrank.go: the libp2p host and its TCP-first dialling.
//   - lan.go: LAN discovery (mDNS): answers as bounded, backed-off hellos
//     (LAN), the hello and the roster being the server's (LANConfig).
//   - identity.go: the identity key of a data directory (LoadIdentity).
//   - default.go: the network of a node that names none (DefaultNetwork).
package transport

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
)

// Protocol ids, versioned: a change of any layout bumps the number.
const (
	ProtoRoster protocol.ID = "/riffle/1/roster" // server hello
	ProtoEpoch  protocol.ID = "/riffle/1/epoch"  // epoch setup between servers
	ProtoRound  protocol.ID = "/riffle/1/round"  // mixing, lists, padded answers, chunk fetch
	ProtoClient protocol.ID = "/riffle/1/client" // client ↔ primary: join, register, submit, lists, index
	ProtoPIR    protocol.ID = "/riffle/1/pir"    // client ↔ primary: queries and answers
)

// Stream is one bidirectional stream between two hosts. Semantics follow
// libp2p's: CloseWrite half-closes (the peer reads EOF), Close closes both
// directions gracefully, Reset aborts both (the peer's reads and writes
// fail), and a deadline fails reads and writes after it passes.
type Stream interface {
	io.Reader
	io.Writer
	Close() error
	CloseWrite() error
	Reset() error
	SetDeadline(time.Time) error
	// RemotePeer is the authenticated id of the other end.
	RemotePeer() peer.ID
}

// Handler serves one inbound stream; the host runs it on a goroutine of
// its own.
type Handler func(Stream)

// Host is one endpoint of a network, identified by its key's peer id.
type Host interface {
	ID() peer.ID
	// Addrs are the addresses it listens on (none for a client).
	Addrs() []ma.Multiaddr
	// AddAddrs remembers where p can be dialled, for ttl.
	AddAddrs(p peer.ID, addrs []ma.Multiaddr, ttl time.Duration)
	// Connect dials p unless a connection is up.
	Connect(ctx context.Context, ai peer.AddrInfo) error
	// Connected reports whether a connection to p is up.
	Connected(p peer.ID) bool
	// RemoteAddrs are the addresses p's live connections come from.
	RemoteAddrs(p peer.ID) []ma.Multiaddr
	// OnDisconnect calls f, on a goroutine of the network's, when the last
	// connection to a peer closes.
	OnDisconnect(f func(peer.ID))
	// Protect keeps the connections to p from being trimmed.
	Protect(p peer.ID, tag string)
	// Unprotect undoes Protect.
	Unprotect(p peer.ID, tag string)
	// NewStream opens a stream to p for proto, dialling p if needed.
	NewStream(ctx context.Context, p peer.ID, proto protocol.ID) (Stream, error)
	// SetStreamHandler serves inbound streams of proto.
	SetStreamHandler(proto protocol.ID, h Handler)
	// Close closes every connection and stops serving.
	Close() error
}

// Network makes hosts: priv is the identity key (nil: a fresh one),
// listen the multiaddrs to listen on (none: dial only).
type Network interface {
	NewHost(priv crypto.PrivKey, listen []string) (Host, error)
}

// ErrNoRoute is the error of a dial that finds no host at any of the
// peer's addresses.
var ErrNoRoute = errors.New("transport: no route to peer")
