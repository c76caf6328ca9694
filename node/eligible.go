package node

import (
	"errors"
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/riffle-net/riffle/node/internal/eligible"
)

// Who may serve (§3 (v3) "Who may serve") is package
// internal/eligible's: the operator's pins, the probation, the founders,
// the chains signed and the withdrawals, with its own lock. This file is
// what the chains (internal/members) read of the server and a refused
// Prepare's withdrawal.

// withdrawMark begins every withdrawal's reason.
const withdrawMark = eligible.WithdrawMark

// lastNumber is this server's last epoch number.
func (s *Server) lastNumber() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.number
}

// memberHost is what internal/members (Server.members: the chains, who
// is a server of the group) reads of the server.
type memberHost struct{ s *Server }

func (h memberHost) Self() peer.ID                  { return h.s.h.ID() }
func (h memberHost) Excluded(p peer.ID) bool        { return h.s.rb.Has(p) }
func (h memberHost) OutAt(p peer.ID, n uint64) bool { return h.s.refusalOutAt(p, n) }
func (h memberHost) LastNumber() uint64             { return h.s.lastNumber() }

// noteWithdrawal records the server whose refusal in err is a withdrawal,
// or that refused on another ground; it reports whether there was one
// (the leader then tries again at once without it).
func (s *Server) noteWithdrawal(err error) bool {
	var ce *chainErr
	if !errors.As(err, &ce) {
		return false
	}
	if errors.Is(ce.Err, errBusy) {
		// Turn-taking, no refusal: the server's own epoch ended a
		// moment after the leader's; the leader tries again later
		// with it (leader.go).
		return false
	}
	if !strings.Contains(ce.Err.Error(), withdrawMark) {
		// (issue 25 point 3) a server that refused the Prepare on any
		// other ground is left out of the next attempt at this number
		// for a moment: every other server asks it whether it would
		// serve (derive.go) and accepts its absence only if it refuses
		// that question too, so a refuser no longer halts the group and
		// an honest server a wrong leader dropped is not left out.
		if ce.Peer != s.h.ID() {
			s.log.Info("server refused the prepare: next attempt without it", "peer", ce.Peer.ShortString(), "reason", ce.Err.Error())
			s.who.Withdraw(ce.Peer, helloEvery)
			return true
		}
		return false
	}
	s.log.Info("server withdrew", "peer", ce.Peer.ShortString(), "reason", ce.Err.Error())
	// A probation ends after epochs the withdrawer counts, not here: its
	// withdrawal is kept only until the next hellos.
	ttl := s.cfg.Timing.WithdrawTTL
	if strings.Contains(ce.Err.Error(), "probation") {
		ttl = helloEvery
	}
	s.who.Withdraw(ce.Peer, ttl)
	return true
}

// chainErr is the failure of one server of a chain in Server.each.
type chainErr struct {
	Index int
	Peer  peer.ID
	Err   error
}

func (e *chainErr) Error() string {
	return fmt.Sprintf("server %d (%s): %v", e.Index, e.Peer.ShortString(), e.Err)
}

func (e *chainErr) Unwrap() error { return e.Err }
