package node

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/blame"
)

// Absence attestations (docs/protocol.md §3, "Charges from evidence"):
// when a round's parts are due here, what this server signs it lacked,
// and how a claimant gathers the chain's attestations.

// absenceDue is when each part of round q is due here (nil while q is
// not open here): the round opens by the group's schedule, or by S_0's
// signed part of it, never by a later server's root (openAt); S_0's part
// is due a round limit (its wait for the onions) and a hop after that,
// and each later part a hop
// after the part before it came here (partCame), or after that part's
// own due if it never came; after its batch came here, or after the
// body's due (bodyDue), if its server said it lacks that batch (lack.go). A hop is a
// server's whole wait for its input (lackWindow) and its processing. When S_0's part opened q here, it came
// at the opening (roots.go): its successor's part is due a hop after the
// opening. Call with s.mu held.
func (e *sepoch) absenceDue(q uint32) []time.Time {
	open, ok := e.openAt[q]
	if !ok {
		return nil
	}
	v := e.final
	limit := time.Duration(v.Desc.Params.RoundLimitMs) * time.Millisecond
	hop := lackWindow(e)
	due := make([]time.Time, len(v.Chain))
	due[0] = open.Add(limit + hop)
	x := e.rounds[q]
	for j := 1; j < len(due); j++ {
		base := due[j-1]
		if at, ok := e.partCame(q, j-1); ok {
			base = at
		}
		// Server j said it lacks part j−1 (a relay note, lack.go): its
		// own part counts from when the batch came here, which it asks
		// this server for, or from when this server gave up on getting
		// it (and attests part j−1 missing first).
		if n := x.noteOf(j - 1); n != nil {
			at := e.bodyDue(q, j-1, n)
			if !n.bodyAt.IsZero() {
				at = n.bodyAt
			}
			if at.After(base) {
				base = at
			}
		}
		due[j] = base.Add(hop)
	}
	return due
}

// noteOf is x's relay note of position j's batch, nil if none (or no x).
func (x *sround) noteOf(j int) *relayNote {
	if x == nil {
		return nil
	}
	return x.notes[j]
}

// partCame is when position j's part of round q (its signed root) came
// here, as far as dues go (partFrom); one that came before the round
// opened here, its input's part not here, counts as come at the latest
// S_0 could mix the round (a round limit after the opening). This
// server's own part has none: its successor's is due from its own due.
// Call with s.mu held.
func (e *sepoch) partCame(q uint32, j int) (time.Time, bool) {
	open, isOpen := e.openAt[q]
	if j == e.pos || !isOpen {
		return time.Time{}, false
	}
	return e.came(q, j, open)
}

// came is partCame with this server's own part taken as come when it
// passed the round on (sentAt), the floor of its successor's.
func (e *sepoch) came(q uint32, j int, open time.Time) (time.Time, bool) {
	at, ok := e.partFrom(q, j, open)
	if ok && at.Before(open) {
		at = open.Add(time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond)
	}
	return at, ok
}

// partFrom is when position j passed round q on, as far as this server
// can tell: its root's arrival here (its own part: when it sent it), but
// never before the part it is made of came here (no honest server passes
// on a round before its input), so that a signer that sends its root to
// one server before the others, or before the round opens there, cannot
// start that server's dues apart from theirs (TestEarlyRootFramesReceiver:
// the receiver counted an early root a round limit after its opening,
// the others from its arrival, and its note came past theirs). The
// signer's kept copy counts from here too (noteRefused, bodyDue). open
// is the round's opening here (zero: not open). Call with s.mu held.
func (e *sepoch) partFrom(q uint32, j int, open time.Time) (time.Time, bool) {
	var at time.Time
	var ok bool
	if j == e.pos {
		at, ok = e.sentAt[q]
	} else {
		at, ok = e.rootAt[rootKey{q, uint16(j + 1)}]
	}
	if !ok {
		return time.Time{}, false
	}
	if j > 0 && !open.IsZero() {
		if prev, ok := e.came(q, j-1, open); ok && at.Before(prev) {
			at = prev
		}
	}
	return at, true
}

// roundAttestLocked is this server's signed attestation of what it lacks
// of round q's parts: bit j, the root of the batch that chain position j
// passes on (for the last, the publication). An attestation is a
// statement about the round while it ran here: it is signed once every
// part is due (absenceDue) or once the round stopped here (made void, or
// the epoch ended), and then sets the bit of a missing part only if its
// due passed before the round stopped, or if its server itself said it
// lacks its input (lack.go) and this server does not lack that input too.
// A batch whose receiver noted that it lacks it (lack.go) counts as held
// only if its body came here by its due (bodyDue), and missing from
// then. Nothing is attested of a round not open here (a root alone
// opens nothing). The first one signed is the answer ever
// after: it speaks of times before it, and two of one signer would be its
// equivocation. nil when not due or unsigned. Call with s.mu held.
func (s *Server) roundAttestLocked(e *sepoch, q uint32) *wire.Attest {
	v := e.final
	if v == nil || q >= v.Desc.Params.Rounds {
		return nil
	}
	if a := e.attested[q]; a != nil {
		return a
	}
	due := e.absenceDue(q)
	if due == nil {
		return nil
	}
	x := e.rounds[q]
	stop := e.endedAt
	if x != nil && !x.voidAt.IsZero() && (stop.IsZero() || x.voidAt.Before(stop)) {
		stop = x.voidAt
	}
	m := len(v.Chain)
	if stop.IsZero() {
		if time.Now().Before(due[m-1]) {
			return nil
		}
		stop = time.Now()
	}
	var bits uint64
	if x == nil || x.list == nil || x.list.Void() {
		for j := range m {
			var held bool
			dueJ := due[j]
			if j < m-1 {
				_, held = e.roots[rootKey{q, uint16(j + 1)}]
				// A batch whose receiver said it lacks it is held
				// only with its body (lack.go): from the note, the
				// signer had until bodyDue to hand it over here.
				if at, miss := e.bodyMissing(q, j); held && miss {
					held, dueJ = false, at
				}
				if held && j == e.pos-1 && x != nil && x.lacked {
					held, dueJ = false, time.Time{} // this server's own input, given up
				}
			} else {
				held = x != nil && (x.pubDone || x.publishing)
			}
			// A claimant of a lack (lack.go) is charged when its
			// input is here: not when this server lacks it too.
			said := x != nil && x.lackBy != 0 && int(x.lackBy) == j && !e.lacksToo(q, j-1)
			if !held && (!dueJ.After(stop) || said) {
				bits |= 1 << uint(j)
			}
		}
	}
	if s.hookAttestNone(q) {
		bits = 0
	}
	a := s.signAttestLocked(e, wire.AbortNoPub, q, bits)
	if a != nil {
		if e.attested == nil {
			e.attested = map[uint32]*wire.Attest{}
		}
		e.attested[q] = a
	}
	return a
}

// lacksToo reports whether this server lacks round q's part j too (not
// its own): its root is not here, or its body, noted and not got
// (bodyMissing). Call with s.mu held.
func (e *sepoch) lacksToo(q uint32, j int) bool {
	if j < 0 || j == e.pos {
		return false // this server's own part is here
	}
	if _, ok := e.roots[rootKey{q, uint16(j + 1)}]; !ok {
		return true
	}
	_, miss := e.bodyMissing(q, j)
	return miss
}

// closeAttestLocked is this server's signed attestation that no close of
// the registration came from the leader by its own registration deadline
// plus half of T_lead; nil while that is not so here. Call with s.mu held.
func (s *Server) closeAttestLocked(e *sepoch) *wire.Attest {
	if e.closeAttest != nil {
		return e.closeAttest
	}
	if e.final != nil || e.regClosed || e.regDeadline.IsZero() || time.Since(e.regDeadline) < s.cfg.LeaderTimeout/2 {
		return nil
	}
	for j, p := range e.v.Chain {
		if p == e.leader {
			e.closeAttest = s.signAttestLocked(e, wire.AbortNoClose, 0, 1<<uint(j))
			return e.closeAttest
		}
	}
	return nil
}

func (s *Server) signAttestLocked(e *sepoch, kind uint8, round uint32, bits uint64) *wire.Attest {
	if e.pos < 0 {
		return nil
	}
	a := &wire.Attest{AttestReq: wire.AttestReq{Epoch: e.v.ID, Number: e.v.Desc.Number, Kind: kind, Round: round}, Lacking: bits, Signer: uint16(e.pos)}
	sig, err := sign(s.priv, blame.AttestDigest(a))
	if err != nil {
		return nil
	}
	a.Sig = sig
	return a
}

// onAttestReq answers a chain server's request for this server's
// attestation, or says it is not due here.
func (s *Server) onAttestReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	if err := s.lostRecords(); err != nil {
		return 0, nil, err
	}
	var q wire.AttestReq
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[q.Epoch]
	if e == nil || e.v == nil || !inChain(e.v.Chain, from) || e.v.Desc.Number != q.Number {
		return 0, nil, errors.New("node: attestation asked of an epoch not held here")
	}
	var a *wire.Attest
	if q.Kind == wire.AbortNoClose {
		a = s.closeAttestLocked(e)
	} else if e.final != nil && e.admit(q.Round) == nil {
		a = s.roundAttestLocked(e, q.Round)
	}
	if a == nil {
		return 0, nil, errors.New("node: no absence due here")
	}
	return wire.TypeAttest, a.Marshal(), nil
}

// askAttests gathers the attestations of kind and round from the other
// servers of e's chain but skip, once each, within shortTimeout: those
// that answer with a valid one. Never call with s.mu held.
func (s *Server) askAttests(e *sepoch, kind uint8, round uint32, skip peer.ID) []wire.Attest {
	q := (&wire.AttestReq{Epoch: e.v.ID, Number: e.v.Desc.Number, Kind: kind, Round: round}).Marshal()
	var to []peer.ID
	for _, p := range e.v.Chain {
		if p != s.h.ID() && p != skip {
			to = append(to, p)
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, shortTimeout)
	defer cancel()
	reps, _ := s.each(ctx, to, request{Proto: ProtoEpoch, Type: wire.TypeAttestReq, Body: q, Timeout: shortTimeout})
	var out []wire.Attest
	for i, rep := range reps {
		var a wire.Attest
		if rep == nil || a.Unmarshal(rep) != nil || a.Epoch != e.v.ID || a.Kind != kind || a.Round != round ||
			int(a.Signer) >= len(e.v.Chain) || e.v.Chain[a.Signer] != to[i] {
			continue
		}
		if verifyPeerSig(to[i], blame.AttestDigest(&a), a.Sig) == nil {
			out = append(out, a)
		}
	}
	return out
}
