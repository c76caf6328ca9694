package node

import (
	"bytes"
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/blame"
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
			if q == p && j < 64 {
				e.probedDown |= 1 << uint(j)
			}
		}
		s.attestDownLocked(e, p)
		if e.ended {
			continue
		}
		for j, q := range e.v.Chain {
			if q == p {
				s.endQuiet(e, "server "+p.ShortString()+" left")
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.gatherDown(e, j)
				}()
				break
			}
		}
	}
}

// gatherDown ends e for everyone with a signed abort saying that the
// server at chain position j was down (wire.AbortDown), carrying the
// chain's signed attestations of it: one server's view that a peer left
// is no evidence (§3). It asks the chain's other servers until more than
// half of them attest the server down, which charges it, without blame,
// and is the public cause that takes back the epoch's other counts at
// every server; after twice the probe without that backing it signs
// anyway (charged to itself while no majority backs it), unless another
// server's abort ended e meanwhile.
func (s *Server) gatherDown(e *sepoch, j int) {
	p := e.v.Chain[j]
	reason := "server " + p.ShortString() + " left"
	// The others' probes began as this one's did: past twice the probe,
	// the rest of the chain would meanwhile charge this server's
	// absence. Later attestations still back the abort (attestDownLocked).
	deadline := time.Now().Add(2*s.cfg.Timing.ServerProbe + s.cfg.Timing.AbortSettle)
	var got []wire.Attest
	backed := false
	for {
		s.mu.Lock()
		if own := s.downAttestLocked(e, j); own != nil {
			got = append(got, *own)
		}
		s.mu.Unlock()
		got = append(got, s.askAttests(e, wire.AbortDown, uint32(j), p)...)
		ev := &wire.Charge{Kind: wire.EvAbort, Number: e.v.Desc.Number}
		blame.MergeAttests(ev, got)
		got = ev.Attests
		if backed = backedAgainst(ev, len(e.v.Chain), j); backed || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(max(s.cfg.Timing.ServerProbe/2, 100*time.Millisecond)):
		}
	}
	s.mu.Lock()
	if !backed && s.ref.AbortedByOther(e.v.ID, s.h.ID()) {
		s.mu.Unlock()
		return // its end was another's (the settle rule, internal/evidence)
	}
	s.evs().SendBacked(evEp(e), wire.AbortDown, uint32(j), reason, got)
	s.mu.Unlock()
}

// noteDownAbort keeps a signed abort of e saying a server was down (a
// few a position), for attestDownLocked, and reports whether it is
// kept. Call with s.mu held.
func (e *sepoch) noteDownAbort(a *wire.Abort) bool {
	j, b := int(a.Round), a.Marshal()
	if j >= len(e.v.Chain) {
		return false
	}
	for _, x := range e.downAborts[j] {
		if bytes.Equal(x, b) {
			return true
		}
	}
	if len(e.downAborts[j]) >= maxDownAborts {
		return false
	}
	if e.downAborts == nil {
		e.downAborts = map[int][][]byte{}
	}
	e.downAborts[j] = append(e.downAborts[j], b)
	return true
}

// maxDownAborts bounds the down aborts kept a position: one a signer of
// an honest chain would do, m_max.
const maxDownAborts = 8

// attestDownLocked adds this server's attestation that p was down to the
// evidence of every abort of e saying so seen here before its own probe
// of p failed, and relays it: the abort's backing does not hang on which
// server's probe ended first. Call with s.mu held.
func (s *Server) attestDownLocked(e *sepoch, p peer.ID) {
	for j, q := range e.v.Chain {
		if q != p || len(e.downAborts[j]) == 0 {
			continue
		}
		own := s.downAttestLocked(e, j)
		if own == nil {
			return
		}
		for _, item := range e.downAborts[j] {
			s.noteChargeLocked(e, &wire.Charge{Kind: wire.EvAbort, Number: e.v.Desc.Number, Item: item, Attests: []wire.Attest{*own}}, nil, "")
		}
	}
}

// askedDownLocked is downAttestLocked for another server's request
// (gatherDown's): given only once this server's own probe of that server
// failed while it held e, or while it holds an abort saying it was down.
// Answered at any moment it was not live here, it let a server collect
// attestations of a lapse that ended no epoch and sign a backed abort
// later, with the server live again (rev42b G5). Call with s.mu held.
func (s *Server) askedDownLocked(e *sepoch, j int) *wire.Attest {
	if j < 0 || j >= 64 || e.probedDown&(1<<uint(j)) == 0 && len(e.downAborts[j]) == 0 {
		return nil
	}
	return s.downAttestLocked(e, j)
}

// downAttestLocked is this server's signed attestation that the server at
// chain position j of e was down: signed once that server is not live
// here (its probe failed), the answer ever after; nil before. Once e
// ended here, only an outage that began before its end is attested: no
// hello since, and if the server is forgotten here, not live at the end.
// A later outage, a restart, says nothing of the epoch, and attested it
// moved an unbacked down abort onto that server
// (TestLateOutageNotAttested). Call with s.mu held.
func (s *Server) downAttestLocked(e *sepoch, j int) *wire.Attest {
	if j < 0 || j >= len(e.v.Chain) || e.v.Chain[j] == s.h.ID() {
		return nil
	}
	if a := e.downAttest[j]; a != nil {
		return a
	}
	p := e.v.Chain[j]
	if s.roster.get(p) != nil {
		return nil
	}
	if e.ended {
		seen, known := s.roster.LastSeen(p)
		if known && seen.After(e.endedAt) || !known && e.liveAtEnd&(1<<uint(j)) != 0 {
			return nil
		}
	}
	a := s.signAttestLocked(e, wire.AbortDown, uint32(j), 1<<uint(j))
	if a != nil {
		if e.downAttest == nil {
			e.downAttest = map[int]*wire.Attest{}
		}
		e.downAttest[j] = a
	}
	return a
}
