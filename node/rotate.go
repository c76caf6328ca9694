package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// Rotating leaders (§3 (v3) "Epoch numbers and leaders";
// docs/proto-node.md "Rotating leaders"). The leader of epoch number N is
// chain[N mod |chain|] of the chain derived from N−1's certificate
// (derive.go: the group chain of eligible.go, live, not blamed, past
// probation, the operator's pins left aside so that servers with different
// pins agree, with the live servers of that certificate), so that a low
// peer id buys nothing; every server checks a Prepare's sender against its
// own derived chain. The chain the
// leader proposes is its eligible chain (pins applied) less the servers
// that withdrew. A silent leader costs one T_lead: a server that saw no
// epoch opened, ended or certified (nor a number's first Prepare) for
// T_lead while its group chain was
// complete signs a timeout of the number (certs.go); once more than half
// of the servers other than the leader did, the timeout certificate moves
// every server to the next number, whose leader is the next server. A
// server that lacks a number's certificate waits for it (or catches up)
// rather than move on alone.

// DefaultLeaderTimeout is T_lead (§3).
const DefaultLeaderTimeout = 30 * time.Second

// leaderOf is the leader of epoch number n in chain (chain order).
func leaderOf(n uint64, chain []peer.ID) peer.ID {
	return chain[n%uint64(len(chain))]
}

// turnState is where a server is in the rotation. Guarded by Server.mu.
type turnState struct {
	// progress is when an epoch was last opened, ended or certified here,
	// or the first Prepare of a number came (a leader that prepares again
	// and again, never opening, gains nothing by it).
	progress time.Time
	// prepared is the number of the last Prepare taken here.
	prepared uint64
	// led counts the epochs this server opened as leader.
	led int
	// active is when an epoch's state last changed here (notify).
	active time.Time
}

// nextNumber is the number this server expects next: the one after the
// last certified here.
func (s *Server) nextNumber() uint64 { return s.certTop() + 1 }

// progressed restarts the leader timeout. Call with s.mu held.
func (s *Server) progressed() { s.turn.progress = time.Now() }

// busy says why this server takes no Prepare now: an epoch runs here and
// changed within T_lead (a server outside the last chains does not know
// that an epoch runs, and its turn must not cut it short; an epoch whose
// end this server missed stops blocking after T_lead). Call with s.mu held.
func (s *Server) busy() error {
	if s.running() && time.Since(s.turn.active) < s.cfg.LeaderTimeout {
		return errBusy
	}
	return nil
}

// errBusy is busy's refusal of a Prepare: turn-taking, not a fault (the
// leader's own epoch ended a moment before this server's). The leader
// recognises it, as sent, by errors.Is (wire.Refusal).
const errBusy = wire.Refusal("node: an epoch is running here")

// running reports whether an epoch runs here. Call with s.mu held.
func (s *Server) running() bool {
	for _, e := range s.epochs {
		if !e.ended {
			return true
		}
	}
	return false
}

// takeTurn decides, once per leader-loop tick, the number to lead (0: none)
// and the chain to propose. While an epoch runs, or the group chain is
// short, the timeout does not run; past it, this server signs a timeout of
// the number (once every T_lead until it is certified).
func (s *Server) takeTurn() (uint64, []peer.ID) {
	n := s.nextNumber()
	full := s.takenChain(n)
	eligible := s.pinned(full)
	short := len(full) < s.cfg.MinServers || (n == 1 && s.checkFounding(full) != nil)
	s.mu.Lock()
	s.endUnclosedLocked()
	if short || s.running() {
		s.progressed()
		s.mu.Unlock()
		return 0, nil
	}
	if time.Since(s.turn.progress) > s.cfg.LeaderTimeout {
		s.progressed()
		s.mu.Unlock()
		s.voteTimeout(n, full)
		return 0, nil
	}
	// A number this server signed an open descriptor of is never led
	// again: it ends in a certificate first.
	mine := leaderOf(n, full) == s.h.ID() && n > s.number
	s.mu.Unlock()
	if !mine {
		return 0, nil
	}
	return n, eligible
}

// endUnclosedLocked ends the open epoch of another leader that did not
// close its registration within T_lead after this server's registration
// deadline although the clients this server needs had registered: a
// leader silent after opening otherwise held every server of its chain
// for good (it signed the open descriptor, so it never votes the number's
// timeout). The signed abort (AbortNoClose) with the open signatures
// certifies the number, and every server that had no close either by
// its own deadline plus half of T_lead charges the leader (refusals.go).
// Call with s.mu held.
func (s *Server) endUnclosedLocked() {
	e := s.open
	if e == nil || e.ended || e.regClosed || e.final != nil || e.regDeadline.IsZero() || e.leader == s.h.ID() {
		return
	}
	if time.Since(e.regDeadline) < s.cfg.LeaderTimeout || len(e.fwd) < s.cfg.MinClients {
		return
	}
	const reason = "registration not closed within T_lead of its deadline"
	s.log.Warn("leader silent after opening: epoch aborted", "number", e.v.desc.Number, "leader", e.leader.ShortString())
	s.endQuiet(e, reason)
	s.broadcastAbortKind(e, wire.AbortNoClose, 0, reason)
}
