package peers

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/roster"
	"github.com/riffle-net/riffle/node/transport"
)

type host struct {
	transport.Host
	remote map[peer.ID][]ma.Multiaddr
}

func (h *host) ID() peer.ID                          { return "self" }
func (h *host) RemoteAddrs(p peer.ID) []ma.Multiaddr { return h.remote[p] }

type epochs struct{ chain, registered map[peer.ID]bool }

func (e *epochs) InChain(p peer.ID) bool    { return e.chain[p] }
func (e *epochs) Registered(p peer.ID) bool { return e.registered[p] }

// TestCaps (§3): a server protocol's cap holds for this server, a roster
// server and a server of a chain held here; anyone else, a client of
// this server too, sends at most OutsiderCap.
func TestCaps(t *testing.T) {
	r := &roster.Table{}
	r.Saw("roster", "", nil)
	w := &Who{H: &host{}, Roster: r, Epochs: &epochs{chain: map[peer.ID]bool{"chain": true}, registered: map[peer.ID]bool{"client": true}}}
	caps := w.Caps(func(wire.Type) int { return 1 << 20 })
	for _, p := range []peer.ID{"self", "roster", "chain"} {
		if c := caps(p, wire.TypeSignReq); c != 1<<20 {
			t.Errorf("server %s capped at %d", p, c)
		}
	}
	for _, p := range []peer.ID{"client", "stranger"} {
		if c := caps(p, wire.TypeSignReq); c != OutsiderCap {
			t.Errorf("%s may send %d", p, c)
		}
	}
	if !w.Client("client") || w.Client("stranger") {
		t.Error("a registered client not told from a stranger")
	}
}

// TestRanges: a peer's range is its address's /24 or /48, with the /32
// of an IPv6 address beside it; one loopback range; "unknown" without a
// connection.
func TestRanges(t *testing.T) {
	h := &host{remote: map[peer.ID][]ma.Multiaddr{
		"v4":   {ma.StringCast("/ip4/192.0.2.7/tcp/1")},
		"v6":   {ma.StringCast("/ip6/2001:db8:1:2::5/udp/1/quic-v1")},
		"loop": {ma.StringCast("/ip4/127.0.0.1/tcp/1")},
	}}
	w := &Who{H: h}
	for p, want := range map[peer.ID][2]string{
		"v4":   {"192.0.2.0/24", ""},
		"v6":   {"2001:db8:1::/48", "2001:db8::/32"},
		"loop": {"loopback", ""},
		"none": {"unknown", ""},
	} {
		if rng, wide := w.Ranges(p); rng != want[0] || wide != want[1] {
			t.Errorf("%s: %q %q, want %q %q", p, rng, wide, want[0], want[1])
		}
	}
}
