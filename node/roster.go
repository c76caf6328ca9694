package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/node/internal/roster"
	"github.com/riffle-net/riffle/node/transport"
)

// The roster's rules (internal/roster) by the names node's files use.
const (
	helloEvery   = roster.HelloEvery
	rosterTTL    = roster.TTL
	roleServer   = roster.RoleServer
	rosterForget = roster.Forget
	maxRoster    = roster.Max
)

func sortChain(ids []peer.ID) { roster.SortChain(ids) }

// rosterTable is the roster (internal/roster, its own lock) by the names
// node's files call it.
type rosterTable struct{ roster.Table }

func (r *rosterTable) get(id peer.ID) *roster.Member { return r.Get(id) }
func (r *rosterTable) live() []*roster.Member        { return r.Live() }
func (r *rosterTable) saw(id peer.ID, nick string, addrs []ma.Multiaddr) bool {
	return r.Saw(id, nick, addrs)
}

// newHellos is s's side of the roster protocol (internal/roster's
// Hellos): a server's hello is recorded by sawServer, one forgotten
// loses its connections' protection.
func newHellos(s *Server) *roster.Hellos {
	return &roster.Hellos{Table: &s.roster.Table, H: s.h, Version: ProtocolVersion, Nick: s.cfg.Nick, Log: s.log,
		Saw:    s.sawServer,
		Forgot: func(id peer.ID) { s.h.Unprotect(id, serverConnTag) },
		Tick:   s.who.Prune}
}

// lanConfig is what LAN discovery (transport.LAN) takes from s: an answer
// is only an address hint, admitted to the roster by s's hello alone.
func lanConfig(s *Server) transport.LANConfig {
	return transport.LANConfig{
		Known:        func(id peer.ID) bool { return s.roster.get(id) != nil },
		Hello:        s.hellos.Say,
		Retry:        s.cfg.Timing.LANRetry,
		HelloTimeout: s.cfg.Timing.LANHelloTimeout,
		AddrTTL:      rosterTTL * 2,
		Log:          s.log,
	}
}

// sayHello exchanges hellos with p (serverdown.go's name).
func (s *Server) sayHello(ctx context.Context, p peer.ID) error {
	return s.hellos.Say(ctx, p)
}
