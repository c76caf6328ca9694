package node

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Absence attestations (docs/protocol.md §3, "Charges from evidence"):
// when a round's parts are due here, what this server signs it lacked,
// and how a claimant gathers the chain's attestations.

// dues is the epoch's group constants of the dues (blame.Dues).
func (e *sepoch) dues() blame.Dues {
	return blame.Dues{Limit: time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond}
}

// times is what this server saw of round q, in time, for the dues
// (blame.Round): the opening, when each part came here (its own: when it
// passed the round on) and the relay notes taken here. Call with s.mu
// held.
func (e *sepoch) times(q uint32) *blame.Round {
	m := len(e.final.Chain)
	r := &blame.Round{Open: e.openAt[q], Self: e.pos, Parts: make([]time.Time, m)}
	for j := 0; j < m-1; j++ {
		r.Parts[j] = e.rootAt[rootKey{q, uint16(j + 1)}]
	}
	if at, ok := e.sentAt[q]; ok && e.pos >= 0 && e.pos < m {
		r.Parts[e.pos] = at
	}
	for j := 0; j < m-1; j++ {
		if c := e.copies[rootKey{q, uint16(j + 1)}]; c != nil {
			if r.In == nil {
				r.In = make([]time.Time, m)
			}
			r.In[j] = c.in
		}
	}
	if x := e.rounds[q]; x != nil && len(x.notes) > 0 {
		r.Notes = make([]blame.Note, m)
		for j, n := range x.notes {
			if j >= 0 && j < m {
				r.Notes[j] = blame.Note{At: n.at, BodyAt: n.bodyAt}
			}
		}
	}
	return r
}

// absenceDue is when each part of round q is due here (blame.Dues.Due;
// nil while q is not open here). Call with s.mu held.
func (e *sepoch) absenceDue(q uint32) []time.Time { return e.dues().Due(e.times(q)) }

// partCame is when position j's part of round q came here, as far as dues
// go (blame.Dues.Came). Call with s.mu held.
func (e *sepoch) partCame(q uint32, j int) (time.Time, bool) {
	return e.dues().Came(e.times(q), j)
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
	if v == nil {
		return nil
	}
	if q >= v.Desc.Params.Rounds {
		// No such round: nothing lacking, once the epoch ended (an
		// abort of it). Not kept: the same bytes every time (Ed25519
		// signs deterministically), so no table grows and no two differ.
		if !e.ended {
			return nil
		}
		return s.signAttestLocked(e, wire.AbortNoPub, q, 0)
	}
	if a := e.attested[q]; a != nil {
		return a
	}
	due := e.absenceDue(q)
	x := e.rounds[q]
	void := x != nil && x.void
	if due == nil && !void && !e.ended {
		return nil
	}
	stop := e.endedAt
	if x != nil && !x.voidAt.IsZero() && (stop.IsZero() || x.voidAt.Before(stop)) {
		stop = x.voidAt
	}
	m := len(v.Chain)
	if due == nil {
		// A void signed here, or the epoch ended, of a round not open
		// here: nothing lacking, but attested, since a charge waits
		// until no attestation still to come can move it
		// (blame.ChargeOf).
		return s.keepAttestLocked(e, q, s.signAttestLocked(e, wire.AbortNoPub, q, 0))
	}
	d := e.dues()
	if stop.IsZero() {
		// Not before any copy still to come could count (Settled).
		if time.Now().Before(due[m-1]) {
			return nil
		}
		for j := 0; j < m-1; j++ {
			if time.Now().Before(d.Settled(due, j, m)) {
				return nil
			}
		}
		stop = time.Now()
	}
	var bits uint64
	if x == nil || x.list == nil || x.list.Void() {
		for j := range m {
			var held bool
			dueJ := due[j]
			if j < m-1 {
				// Missing once no relayed copy still to come can
				// count, so that every honest server attests alike
				// (rootrelay.go).
				dueJ = d.Settled(due, j, m)
				_, held = e.roots[rootKey{q, uint16(j + 1)}]
				held = held && !d.Late(e.times(q), due, j)
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
	if s.hookRun().AttestNone(q) {
		bits = 0
	}
	return s.keepAttestLocked(e, q, s.signAttestLocked(e, wire.AbortNoPub, q, bits))
}

// attestable reports whether this server attests round q of e: a round
// of its admission window, or once the epoch ended here one ahead of it
// (never open here: nothing lacking). Refused, an abort of a round past a
// lagging server's window got no attestation there and, two such servers
// of four, charged nobody for good (TestEarlyNoPubCharged, about 1 run in
// 2). At most R attestations an epoch. Call with s.mu held.
func (e *sepoch) attestable(q uint32) bool {
	return e.final != nil && (e.admit(q) == nil || e.ended && q >= e.pruned)
}

// keepAttestLocked keeps a, this server's attestation of round q, as
// the answer ever after. Call with s.mu held.
func (s *Server) keepAttestLocked(e *sepoch, q uint32, a *wire.Attest) *wire.Attest {
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
	if d, r := e.dues(), e.times(q); d.Late(r, d.Due(r), j) {
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
	if e.final != nil || e.reg.Closed() || e.reg.Deadline().IsZero() || time.Since(e.reg.Deadline()) < s.cfg.LeaderTimeout/2 {
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
	sig, err := proto.Sign(s.priv, blame.AttestDigest(a))
	if err != nil {
		return nil
	}
	a.Sig = sig
	return a
}

// onAttestReq answers a chain server's request for this server's
// attestation, or says it is not due here.
func (s *Server) onAttestReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	if err := s.amnesia.Lost(s.cert.Top()); err != nil {
		return 0, nil, err
	}
	var q wire.AttestReq
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[q.Epoch]
	if e == nil && q.Kind == wire.AttestSilent {
		e = s.askingLocked(q.Epoch) // silent.go: forgotten, its asks running
	}
	if e == nil || e.v == nil || !proto.InChain(e.v.Chain, from) || e.v.Desc.Number != q.Number {
		return 0, nil, errors.New("node: attestation asked of an epoch not held here")
	}
	var a *wire.Attest
	if q.Kind == wire.AbortNoClose {
		a = s.closeAttestLocked(e)
	} else if q.Kind == wire.AbortDown {
		a = s.askedDownLocked(e, int(q.Round))
	} else if q.Kind == wire.AbortNoList {
		// A note that no list was proposed here, which ends an epoch
		// charging nobody (listdue.go); it backs no abort.
		a = s.listNoteLocked(e, q.Round)
	} else if q.Kind == wire.AttestSilent {
		a = s.silentAttestLocked(e, q.Round)
	} else if e.attestable(q.Round) {
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
	ctx, cancel := context.WithTimeout(s.ctx, transport.ShortTimeout)
	defer cancel()
	reps, _ := s.each(ctx, to, transport.Request{Proto: ProtoEpoch, Type: wire.TypeAttestReq, Body: q, Timeout: transport.ShortTimeout})
	var out []wire.Attest
	for i, rep := range reps {
		var a wire.Attest
		if rep == nil || a.Unmarshal(rep) != nil || a.Epoch != e.v.ID || a.Kind != kind || a.Round != round ||
			int(a.Signer) >= len(e.v.Chain) || e.v.Chain[a.Signer] != to[i] {
			continue
		}
		if proto.VerifyPeerSig(to[i], blame.AttestDigest(&a), a.Sig) == nil {
			out = append(out, a)
		}
	}
	return out
}
