package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// DefaultListen is where a fresh server listens: loopback only. Operators
// open it to the world with explicit --listen addresses (docs/proto-node.md).
var DefaultListen = []string{"/ip4/127.0.0.1/tcp/4433", "/ip4/127.0.0.1/udp/4433/quic-v1"}

// Resource limits for a server expected to carry hundreds of clients
// (measured in docs/proto-node.md: libp2p's auto-scaled defaults allow only
// about 250 inbound connections on a 2-core, few-GiB machine, and 64 inbound
// streams per peer, too few for a primary that the next server sends batches,
// lists and padded answers to).
const (
	LimitConnsInbound = 4096
	LimitConns        = 8192
	LimitPeerStreams  = 4096
	LimitFD           = 8192
)

// Stream limits by protocol (docs/proto-node.md "Hostile peers and
// crashes"): the server protocols (epoch, round) and the client protocols
// (client, PIR) each have their own inbound budget, and the system's is
// their sum, so that a flood of client streams, from any number of peer
// ids, never takes the streams the chain needs. A client needs few streams
// at once (its polls, W submissions, 2 queries): 64 per client protocol.
const (
	LimitServerProtoStreams = 16384 // inbound, per server protocol
	LimitClientProtoStreams = 16384 // inbound, per client protocol
	LimitRosterStreams      = 1024  // inbound hellos
	LimitClientPeerStreams  = 64    // one peer's, per client protocol
	LimitTransientStreams   = 4096  // streams not yet bound to a protocol
	LimitStreamsInbound     = 2*LimitServerProtoStreams + 2*LimitClientProtoStreams + LimitRosterStreams + LimitTransientStreams
	LimitStreams            = 2 * LimitStreamsInbound
)

// ResourceLimits returns the limit configuration riffle servers use.
func ResourceLimits() rcmgr.ConcreteLimitConfig {
	scaling := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&scaling)
	base := scaling.AutoScale()
	// Memory accounting is for muxer windows: leave it to auto-scaling, so
	// that a small machine is still protected against buffer exhaustion.
	sys := rcmgr.ResourceLimits{
		ConnsInbound: LimitConnsInbound, Conns: LimitConns, ConnsOutbound: LimitConns,
		StreamsInbound: LimitStreamsInbound, Streams: LimitStreams, StreamsOutbound: LimitStreams,
		FD: LimitFD,
	}
	peer := rcmgr.ResourceLimits{StreamsInbound: LimitPeerStreams, StreamsOutbound: LimitPeerStreams, Streams: 2 * LimitPeerStreams}
	server := rcmgr.ResourceLimits{StreamsInbound: LimitServerProtoStreams, Streams: 2 * LimitServerProtoStreams}
	client := rcmgr.ResourceLimits{StreamsInbound: LimitClientProtoStreams, Streams: 2 * LimitClientProtoStreams}
	clientPeer := rcmgr.ResourceLimits{StreamsInbound: LimitClientPeerStreams, StreamsOutbound: LimitClientPeerStreams, Streams: 2 * LimitClientPeerStreams}
	part := rcmgr.PartialLimitConfig{
		System:      sys,
		Transient:   rcmgr.ResourceLimits{ConnsInbound: 1024, Conns: 2048, StreamsInbound: LimitTransientStreams, Streams: 2 * LimitTransientStreams, FD: LimitFD / 2},
		PeerDefault: peer,
		// Protocols riffle does not speak (identify, ping) share the
		// roster's small budget.
		ProtocolDefault: rcmgr.ResourceLimits{StreamsInbound: LimitRosterStreams, Streams: 2 * LimitRosterStreams},
		Protocol: map[protocol.ID]rcmgr.ResourceLimits{
			ProtoEpoch: server, ProtoRound: server, ProtoClient: client, ProtoPIR: client,
			ProtoRoster: {StreamsInbound: LimitRosterStreams, Streams: 2 * LimitRosterStreams},
		},
		ProtocolPeerDefault: peer,
		ProtocolPeer:        map[protocol.ID]rcmgr.ResourceLimits{ProtoClient: clientPeer, ProtoPIR: clientPeer},
		ServiceDefault:      rcmgr.ResourceLimits{StreamsInbound: LimitStreamsInbound, Streams: LimitStreams},
		ServicePeerDefault:  peer,
	}
	return part.Build(base)
}

// NewLibp2pHost builds the libp2p host: TCP and QUIC, TLS 1.3 first and Noise
// second, yamux, riffle's resource limits, no relay, no port mapping, and
// listening only where told. It dials a peer's TCP addresses first and QUIC
// only as a fallback (dialrank.go).
func NewLibp2pHost(priv crypto.PrivKey, listen []string) (host.Host, error) {
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(ResourceLimits()))
	if err != nil {
		return nil, fmt.Errorf("node: resource manager: %w", err)
	}
	// The connection manager trims connections only far above what a
	// primary serves (libp2p's default trims above 192, clients and
	// servers alike); roster servers' connections are protected.
	cm, err := connmgr.NewConnManager(LimitConnsInbound, LimitConns)
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("node: connection manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.ConnectionManager(cm),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(rm),
		libp2p.SwarmOpts(swarm.WithDialRanker(TCPFirstRanker)),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		libp2p.UserAgent("riffle/1"),
	}
	if priv != nil {
		opts = append(opts, libp2p.Identity(priv))
	}
	if len(listen) == 0 {
		opts = append(opts, libp2p.NoListenAddrs)
	} else {
		opts = append(opts, libp2p.ListenAddrStrings(listen...))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("node: start libp2p host on %v: %w", listen, err)
	}
	return h, nil
}

// Libp2p is the network of the binary: hosts from NewLibp2pHost.
type Libp2p struct{}

// NewHost implements Network.
func (Libp2p) NewHost(priv crypto.PrivKey, listen []string) (Host, error) {
	h, err := NewLibp2pHost(priv, listen)
	if err != nil {
		return nil, err
	}
	return WrapLibp2p(h), nil
}

// WrapLibp2p makes a libp2p host a Host.
func WrapLibp2p(h host.Host) Host { return &libp2pHost{h: h} }

// Libp2pOf returns the libp2p host under h, if it is one (LAN discovery
// runs on libp2p only).
func Libp2pOf(h Host) (host.Host, bool) {
	l, ok := h.(*libp2pHost)
	if !ok {
		return nil, false
	}
	return l.h, true
}

type libp2pHost struct{ h host.Host }

func (l *libp2pHost) ID() peer.ID           { return l.h.ID() }
func (l *libp2pHost) Addrs() []ma.Multiaddr { return l.h.Addrs() }
func (l *libp2pHost) Close() error          { return l.h.Close() }

func (l *libp2pHost) AddAddrs(p peer.ID, addrs []ma.Multiaddr, ttl time.Duration) {
	l.h.Peerstore().AddAddrs(p, addrs, ttl)
}

func (l *libp2pHost) Connect(ctx context.Context, ai peer.AddrInfo) error {
	return l.h.Connect(ctx, ai)
}

func (l *libp2pHost) Connected(p peer.ID) bool {
	return l.h.Network().Connectedness(p) == network.Connected
}

func (l *libp2pHost) RemoteAddrs(p peer.ID) []ma.Multiaddr {
	var out []ma.Multiaddr
	for _, c := range l.h.Network().ConnsToPeer(p) {
		out = append(out, c.RemoteMultiaddr())
	}
	return out
}

func (l *libp2pHost) OnDisconnect(f func(peer.ID)) {
	l.h.Network().Notify(&network.NotifyBundle{
		DisconnectedF: func(_ network.Network, c network.Conn) { f(c.RemotePeer()) },
	})
}

func (l *libp2pHost) Protect(p peer.ID, tag string) { l.h.ConnManager().Protect(p, tag) }

func (l *libp2pHost) Unprotect(p peer.ID, tag string) { l.h.ConnManager().Unprotect(p, tag) }

func (l *libp2pHost) NewStream(ctx context.Context, p peer.ID, proto protocol.ID) (Stream, error) {
	s, err := l.h.NewStream(network.WithAllowLimitedConn(ctx, "riffle"), p, proto)
	if err != nil {
		return nil, err
	}
	return libp2pStream{s}, nil
}

func (l *libp2pHost) SetStreamHandler(proto protocol.ID, h Handler) {
	l.h.SetStreamHandler(proto, func(s network.Stream) { h(libp2pStream{s}) })
}

type libp2pStream struct{ network.Stream }

func (s libp2pStream) RemotePeer() peer.ID { return s.Conn().RemotePeer() }
