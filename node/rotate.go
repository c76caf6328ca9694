package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/leader"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Rotating leaders (§3 (v3) "Epoch numbers and leaders";
// docs/proto-node.md "Rotating leaders"). The leader of epoch number N is
// chain[N mod |chain|] of the chain derived from N−1's certificate
// (internal/members' Derived: the group chain of internal/eligible, live, not blamed, past
// probation, the operator's pins left aside so that servers with different
// pins agree, with the live servers of that certificate), so that a low
// peer id buys nothing; every server checks a Prepare's sender against its
// own derived chain. The chain the
// leader proposes is its eligible chain (pins applied) less the servers
// that withdrew. A silent leader costs one T_lead: a server that saw no
// epoch opened, ended or certified (nor a number's first Prepare) for
// T_lead while its group chain was
// complete signs a timeout of the number (certvotes.go), its leader too;
// once as many as more than half of the servers other than the leader
// did, the timeout certificate moves every server to the next number,
// whose leader is the next server. A
// server that lacks a number's certificate waits for it (or catches up)
// rather than move on alone.

// DefaultLeaderTimeout is T_lead (§3).
const DefaultLeaderTimeout = 30 * time.Second

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
}

// rotation is this server's part in the leader rotation: the loop that
// takes its turn and leads an epoch (leading), and the end of an epoch
// another leader opened and left unclosed. Its state (turnState) is
// under Server.mu.
type rotation struct {
	s *Server
	turnState
}

// progressed restarts the leader timeout. Call with s.mu held.
func (s *Server) progressed() { s.turn.progress = time.Now() }

// busy says why this server takes no Prepare of number n now: an epoch
// runs here whose number is n−1 or above. A Prepare of n carries the
// certificate of n−1 (checked after), so one past a running epoch's
// successor shows that the group certified a number after it, which more
// than half of its chain only signs once the epoch ended there; how long
// the epoch was quiet here decides nothing (a quiet rule let another
// leader's Prepare cut a slow, healthy epoch short at one server and not
// at another: TestBusyFromNumbers). Call with s.mu held.
func (s *Server) busy(n uint64) error {
	for _, e := range s.epochs {
		if !e.ended && e.v != nil && e.v.Desc != nil && n <= e.v.Desc.Number+1 {
			return errBusy
		}
	}
	return nil
}

// errBusy is busy's refusal of a Prepare (leader.ErrBusy).
const errBusy = leader.ErrBusy

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
// and the chain to propose. While an epoch runs here, or the group chain
// is short (below --min-servers, or holding at most half of the chain of
// the last number's certificate: certs.HoldsPrevGroup), the timeout does
// not run; past it, this server signs a timeout of the number (once every
// T_lead until it is certified). An epoch holds the turn until it ends:
// one stale by its dues is ended here (stale.go), never one that was only
// quiet (a corrupt minority that passes its parts on late, inside their
// dues, then ended healthy epochs and had honest servers charged).
func (rt *rotation) takeTurn() (uint64, []peer.ID) {
	s := rt.s
	if s.amnesia.Lost(s.cert.Top()) != nil {
		return 0, nil
	}
	n := s.cert.Next()
	full := s.members.Taken(n)
	eligible := s.who.Pinned(s.h.ID(), full)
	short := len(full) < s.cfg.MinServers || (n == 1 && s.who.CheckFounding(full) != nil) || !s.cert.HoldsPrevGroup(n, full)
	s.mu.Lock()
	rt.endUnclosedLocked()
	for _, e := range s.epochs {
		s.endStaleLocked(e)
	}
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
	// again: it ends in a certificate first; nor one whose timeout it
	// signed (no open descriptor came within T_lead).
	mine := proto.LeaderOf(n, full) == s.h.ID() && n > s.number
	s.mu.Unlock()
	if mine && s.phase.TimeoutSigned(s.cfg.DataDir, n) {
		return 0, nil
	}
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
// timeout). It first gathers the attestations of the chain's other
// servers that no close came by their own deadline plus half of T_lead,
// asking again until more than half of the chain's servers other than
// the leader attest it (charges.go): only then does it sign the abort
// (AbortNoClose), which with the open signatures certifies the number and
// with the attestations charges the leader at every server. A leader that
// sends its open descriptor to this server early and to the others late
// so makes it wait, not pay. Call with s.mu held.
func (rt *rotation) endUnclosedLocked() {
	s := rt.s
	e := s.open
	if e == nil || e.ended || e.reg.Closed() || e.final != nil || e.reg.Deadline().IsZero() || e.leader == s.h.ID() || e.noCloseAsking {
		return
	}
	if time.Since(e.reg.Deadline()) < s.cfg.LeaderTimeout || e.reg.ForwardedCount() < s.cfg.MinClients {
		return
	}
	e.noCloseAsking = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		rt.gatherNoClose(e)
	}()
}

// gatherNoClose asks for the no-close attestations every quarter of T_lead
// until they back the claim, then ends e with the attested abort; it stops
// once e ended or closed otherwise.
func (rt *rotation) gatherNoClose(e *sepoch) {
	s := rt.s
	const reason = "registration not closed within T_lead of its deadline"
	var got []wire.Attest
	for {
		s.mu.Lock()
		if e.ended || e.reg.Closed() || e.final != nil {
			s.mu.Unlock()
			return
		}
		if own := s.closeAttestLocked(e); own != nil {
			got = append(got, *own)
		}
		s.mu.Unlock()
		got = append(got, s.askAttests(e, wire.AbortNoClose, 0, e.leader)...)
		ev := &wire.Charge{Kind: wire.EvAbort, Number: e.v.Desc.Number}
		blame.MergeAttests(ev, got)
		got = ev.Attests
		if noCloseBacked(ev, e.v.Chain, e.leader) {
			break
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(max(s.cfg.LeaderTimeout/4, 100*time.Millisecond)):
		}
	}
	s.mu.Lock()
	if e.ended || e.reg.Closed() || e.final != nil {
		s.mu.Unlock()
		return
	}
	s.log.Warn("leader silent after opening: epoch aborted", "number", e.v.Desc.Number, "leader", e.leader.ShortString(), "attested by", len(got))
	s.endQuiet(e, reason)
	s.evs().SendBacked(evEp(e), wire.AbortNoClose, 0, reason, got)
	s.mu.Unlock()
}

// noCloseBacked reports whether ev's attestations (not checked here) back
// a no-close claim against leader: more than half of chain's servers other
// than it.
func noCloseBacked(ev *wire.Charge, chain []peer.ID, leader peer.ID) bool {
	for j, p := range chain {
		if p == leader {
			return backedAgainst(ev, len(chain), j)
		}
	}
	return false
}
