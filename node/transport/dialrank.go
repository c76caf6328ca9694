package transport

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
)

// QUICFallbackDelay is how long a dial waits for its TCP addresses before
// trying the peer's QUIC ones. libp2p's default ranker prefers QUIC; riffle
// moves most of its bytes in bulk messages (batches, padded answers), for
// which QUIC cost about 2.4 times the CPU of TCP with TLS and yamux per
// byte on loopback (docs/bench/transport.md). A TCP dial that fails
// outright starts the QUIC dials at once (the swarm dials the next
// addresses as soon as none is in flight).
const QUICFallbackDelay = 500 * time.Millisecond

// TCPFirstRanker ranks a peer's addresses for dialing: TCP addresses first,
// in libp2p's default order among themselves, then the others (QUIC) in
// the default order, QUICFallbackDelay after the last TCP dial.
func TCPFirstRanker(addrs []ma.Multiaddr) []network.AddrDelay {
	var tcp, rest []ma.Multiaddr
	for _, a := range addrs {
		if IsPlainTCP(a) {
			tcp = append(tcp, a)
		} else {
			rest = append(rest, a)
		}
	}
	res := swarm.DefaultDialRanker(tcp)
	if len(res) == 0 {
		return swarm.DefaultDialRanker(rest)
	}
	var last time.Duration
	for _, r := range res {
		last = max(last, r.Delay)
	}
	for _, r := range swarm.DefaultDialRanker(rest) {
		r.Delay += last + QUICFallbackDelay
		res = append(res, r)
	}
	return res
}

// IsPlainTCP reports whether a is a direct TCP address (not a relay and not
// a websocket over TCP).
func IsPlainTCP(a ma.Multiaddr) bool {
	tcp := false
	for _, c := range a {
		switch c.Protocol().Code {
		case ma.P_TCP:
			tcp = true
		case ma.P_CIRCUIT, ma.P_WS, ma.P_WSS, ma.P_TLS:
			return false
		}
	}
	return tcp
}
