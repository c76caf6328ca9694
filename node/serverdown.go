package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Tunables.ServerProbe is how long a server that lost its last connection
// to a roster server waits for that server's hello before it takes it for
// gone.
// Without the probe a dead server stayed live in the roster for rosterTTL
// (12 s) and every epoch with it in its chain waited out a round limit.

// serverConnTag protects the connections to roster servers from the
// connection manager's trimming: a crowd of client connections (from any
// number of peer ids) must not get the chain's links closed.
const serverConnTag = "riffle-server"

// sawServer records a hello of server id in the roster and protects its
// connections.
func (s *Server) sawServer(id peer.ID, nick string, addrs []ma.Multiaddr) {
	if !s.roster.saw(id, nick, addrs) {
		return // full of live servers: it is not sighted until admitted
	}
	s.who.Saw(id, s.lastNumber())
	s.h.Protect(id, serverConnTag)
}

// onServerDisconnect runs when the last connection to p closed. If p is a
// live roster server and does not answer a hello within ServerProbe, it
// leaves the roster, so that the chain re-forms without it (while
// MinServers remain), and every running epoch with p in its chain ends
// (§3: an epoch ends when a server leaves or fails).
func (s *Server) onServerDisconnect(p peer.ID) {
	if s.roster.get(p) == nil || s.h.Connected(p) {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timing.ServerProbe)
	err := s.sayHello(ctx, p)
	cancel()
	if err == nil || s.ctx.Err() != nil {
		return
	}
	s.roster.Expire(p) // still greeted: back at its first answer
	s.log.Info("server gone", "peer", p.ShortString(), "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		for j, q := range e.v.Chain {
			if q == p {
				e.down.Probed(j)
			}
		}
		ep := evEp(e)
		s.evs().AttestDown(ep, p)
		if e.ended {
			continue
		}
		for j, q := range e.v.Chain {
			if q == p {
				s.endQuiet(e, "server "+p.ShortString()+" left")
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.evs().GatherDown(ep, j)
				}()
				break
			}
		}
	}
}
