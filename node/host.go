package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
)

// IdentityFile is the name of the libp2p identity key in a data directory.
const IdentityFile = "identity.key"

// DefaultListen is where a fresh server listens: loopback only. Operators
// open it to the world with explicit --listen addresses (docs/proto-node.md).
var DefaultListen = []string{"/ip4/127.0.0.1/tcp/4433", "/ip4/127.0.0.1/udp/4433/quic-v1"}

// LoadIdentity reads the Ed25519 identity key of dir, creating it (mode
// 0600, in a 0700 directory) if absent. The key is both the libp2p identity
// and the server's descriptor-signing key (§3).
func LoadIdentity(dir string) (crypto.PrivKey, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("node: create data directory: %w", err)
	}
	path := filepath.Join(dir, IdentityFile)
	b, err := os.ReadFile(path)
	if err == nil {
		st, serr := os.Stat(path)
		if serr == nil && st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("node: identity key %s is readable by others (mode %o): chmod 600 it", path, st.Mode().Perm())
		}
		k, err := crypto.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("node: decode identity key %s: %w", path, err)
		}
		if k.Type() != crypto.Ed25519 {
			return nil, fmt.Errorf("node: identity key %s is %v, want Ed25519", path, k.Type())
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("node: read identity key: %w", err)
	}
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("node: generate identity key: %w", err)
	}
	raw, err := crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("node: encode identity key: %w", err)
	}
	// O_EXCL: two processes racing on a fresh directory must not both win.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node: create identity key: %w", err)
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: write identity key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: sync identity key: %w", err)
	}
	return k, f.Close()
}

// Resource limits for a server expected to carry hundreds of clients
// (measured in docs/proto-node.md: libp2p's auto-scaled defaults allow only
// about 250 inbound connections on a 2-core, few-GiB machine, and 64 inbound
// streams per peer, too few for a primary that the next server sends batches,
// lists and padded answers to).
const (
	limitConnsInbound = 4096
	limitConns        = 8192
	limitPeerStreams  = 4096
	limitFD           = 8192
)

// Stream limits by protocol (docs/proto-node.md "Hostile peers and
// crashes"): the server protocols (epoch, round) and the client protocols
// (client, PIR) each have their own inbound budget, and the system's is
// their sum, so that a flood of client streams, from any number of peer
// ids, never takes the streams the chain needs. A client needs few streams
// at once (its polls, W submissions, 2 queries): 64 per client protocol.
const (
	limitServerProtoStreams = 16384 // inbound, per server protocol
	limitClientProtoStreams = 16384 // inbound, per client protocol
	limitRosterStreams      = 1024  // inbound hellos
	limitClientPeerStreams  = 64    // one peer's, per client protocol
	limitTransientStreams   = 4096  // streams not yet bound to a protocol
	limitStreamsInbound     = 2*limitServerProtoStreams + 2*limitClientProtoStreams + limitRosterStreams + limitTransientStreams
	limitStreams            = 2 * limitStreamsInbound
)

// ResourceLimits returns the limit configuration riffle servers use.
func ResourceLimits() rcmgr.ConcreteLimitConfig {
	scaling := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&scaling)
	base := scaling.AutoScale()
	// Memory accounting is for muxer windows: leave it to auto-scaling, so
	// that a small machine is still protected against buffer exhaustion.
	sys := rcmgr.ResourceLimits{
		ConnsInbound: limitConnsInbound, Conns: limitConns, ConnsOutbound: limitConns,
		StreamsInbound: limitStreamsInbound, Streams: limitStreams, StreamsOutbound: limitStreams,
		FD: limitFD,
	}
	peer := rcmgr.ResourceLimits{StreamsInbound: limitPeerStreams, StreamsOutbound: limitPeerStreams, Streams: 2 * limitPeerStreams}
	server := rcmgr.ResourceLimits{StreamsInbound: limitServerProtoStreams, Streams: 2 * limitServerProtoStreams}
	client := rcmgr.ResourceLimits{StreamsInbound: limitClientProtoStreams, Streams: 2 * limitClientProtoStreams}
	clientPeer := rcmgr.ResourceLimits{StreamsInbound: limitClientPeerStreams, StreamsOutbound: limitClientPeerStreams, Streams: 2 * limitClientPeerStreams}
	part := rcmgr.PartialLimitConfig{
		System:      sys,
		Transient:   rcmgr.ResourceLimits{ConnsInbound: 1024, Conns: 2048, StreamsInbound: limitTransientStreams, Streams: 2 * limitTransientStreams, FD: limitFD / 2},
		PeerDefault: peer,
		// Protocols riffle does not speak (identify, ping) share the
		// roster's small budget.
		ProtocolDefault: rcmgr.ResourceLimits{StreamsInbound: limitRosterStreams, Streams: 2 * limitRosterStreams},
		Protocol: map[protocol.ID]rcmgr.ResourceLimits{
			ProtoEpoch: server, ProtoRound: server, ProtoClient: client, ProtoPIR: client,
			ProtoRoster: {StreamsInbound: limitRosterStreams, Streams: 2 * limitRosterStreams},
		},
		ProtocolPeerDefault: peer,
		ProtocolPeer:        map[protocol.ID]rcmgr.ResourceLimits{ProtoClient: clientPeer, ProtoPIR: clientPeer},
		ServiceDefault:      rcmgr.ResourceLimits{StreamsInbound: limitStreamsInbound, Streams: limitStreams},
		ServicePeerDefault:  peer,
	}
	return part.Build(base)
}

// newHost builds the libp2p host: TCP and QUIC, TLS 1.3 first and Noise
// second, yamux, riffle's resource limits, no relay, no port mapping, and
// listening only where told. It dials a peer's TCP addresses first and QUIC
// only as a fallback (dialrank.go).
func newHost(priv crypto.PrivKey, listen []string) (host.Host, error) {
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(ResourceLimits()))
	if err != nil {
		return nil, fmt.Errorf("node: resource manager: %w", err)
	}
	// The connection manager trims connections only far above what a
	// primary serves (libp2p's default trims above 192, clients and
	// servers alike); roster servers' connections are protected.
	cm, err := connmgr.NewConnManager(limitConnsInbound, limitConns)
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
		libp2p.SwarmOpts(swarm.WithDialRanker(tcpFirstRanker)),
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
