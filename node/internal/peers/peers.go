// Package peers is who is asking a server (docs/protocol.md §3: "before
// any costly check or any allocation sized by a message, a server checks
// who sent it"; docs/proto-node.md "Hostile peers and crashes"): a server
// of the roster or of a chain held here, a client registered here, the
// address range a peer connects from, and the gates that bound what each
// may hold (a long poll, a reply slot of the group's servers) and send (a
// server protocol's cap).
//
// Who is the type. It has no state and no lock of its own: the roster,
// the chains (package members), the long polls' gate (package polls) and
// the slots (package slots) keep theirs under their own locks, and the
// epochs stay the server's, read through Epochs. It does no I/O.
package peers

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/members"
	"github.com/riffle-net/riffle/node/internal/polls"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roster"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/node/transport"
)

// OutsiderCap is the most a peer outside the roster (and outside every
// epoch chain held here) may send on the server protocols (epoch, round):
// nothing it may send there is legitimate, and reading a small body lets
// the refusal say why.
const OutsiderCap = 4 << 10

// Epochs is what Who reads of the server's running epochs.
type Epochs interface {
	// InChain reports whether p is in the chain of an epoch running here.
	InChain(p peer.ID) bool
	// Registered reports whether p registered a slot or a registration
	// of an epoch running here.
	Registered(p peer.ID) bool
}

// Who says who a peer is to this server.
type Who struct {
	H       transport.Host
	Roster  *roster.Table
	Members *members.Chains
	Epochs  Epochs
	Polls   *polls.Gate
	// Timing is the server's: an outsider's short long poll waits at
	// most its OutsiderPoll, read at each poll.
	Timing *proto.Tunables
}

// Server reports whether p is this server, a live roster server or in
// the chain of an epoch running here.
func (w *Who) Server(p peer.ID) bool {
	if p == w.H.ID() || w.Roster.Get(p) != nil {
		return true
	}
	return w.Epochs.InChain(p)
}

// Client reports whether p registered with an epoch running here.
func (w *Who) Client(p peer.ID) bool { return w.Epochs.Registered(p) }

// Caps bounds a request on a server protocol by its sender: the cap of
// its type for a server peer, at most OutsiderCap for anyone else.
func (w *Who) Caps(caps func(wire.Type) int) func(peer.ID, wire.Type) int {
	return func(from peer.ID, t wire.Type) int {
		c := caps(t)
		if c > OutsiderCap && !w.Server(from) {
			return OutsiderCap
		}
		return c
	}
}

// Range is the address range p connects from (IPv4 /24, IPv6 /48); every
// loopback client is in one range.
func (w *Who) Range(p peer.ID) string {
	rng, _ := w.Ranges(p)
	return rng
}

// Ranges is Range and the wider range it lies in, IPv6 /32 ("" for IPv4,
// loopback and unknown addresses): tunnel brokers hand out /48s of a few
// /32s.
func (w *Who) Ranges(p peer.ID) (rng, wide string) {
	for _, a := range w.H.RemoteAddrs(p) {
		if ip := intake.RemoteIP(a); ip != nil {
			return intake.IPRange(ip), intake.WideRange(ip)
		}
	}
	return "unknown", ""
}

// EnterPoll admits a long poll from p, or refuses it at once (package
// polls: bounded per peer and in all, an outsider's WaitOpen, short set,
// cut to Tunables.OutsiderPoll). Call release when the poll ends.
func (w *Who) EnterPoll(ctx context.Context, p peer.ID, short bool) (context.Context, func(), error) {
	return w.Polls.Enter(ctx, p, w.Client(p), short, w.Timing.OutsiderPoll)
}

// EnterServer takes a slot of g for from, a server of the group
// (members.Chains.GroupPeer), until ctx ends: the certified chains' never
// want one.
func (w *Who) EnterServer(ctx context.Context, g *slots.Servers, from peer.ID) error {
	chain := from == w.H.ID() || w.Members.CertPeer(from)
	rng := ""
	if !chain {
		rng = w.Range(from)
	}
	return g.Enter(ctx, from, chain, rng)
}
