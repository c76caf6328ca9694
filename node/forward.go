package node

import (
	"context"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A primary's forward root (docs/protocol.md §5.4, "A forward root"): when
// a primary forwards its clients' onions of a round to S_0 it signs the
// round's onions it holds, slot and submission digest (wire.ForwardRoot),
// and sends that root to every chain server beside the forward; from then
// on it takes no onion of the round for a slot outside the root. A
// receipt a client shows of an onion its primary's root leaves out is
// logged with the root (wire.EvForward) and charges the primary on the
// two signatures alone (blame.ChargeOf).

// signForwardRootLocked signs this primary's forward root of round r:
// every onion of its clients it holds for r, a dead slot's too (its
// filler is public, and the receipt of its onion must not meet a root
// without it), and keeps it as the round's. Call with s.mu held.
func (s *Server) signForwardRootLocked(e *sepoch, r uint32) *wire.ForwardRoot {
	x := e.round(r)
	f := &wire.ForwardRoot{Epoch: e.final.ID, Round: r, Server: uint16(e.pos)}
	for _, sl := range e.clientsOf(e.pos) { // in slot order
		sub, ok := x.subs[sl]
		if !ok {
			continue
		}
		d, ok := e.receipted[dryKey{r, sl}]
		if !ok {
			d = mix.SubmissionDigest(sub.Onion)
		}
		f.Entries = append(f.Entries, wire.AccountEntry{Slot: sl, Digest: d})
	}
	s.hookRun().ForwardRoot(f)
	sig, err := proto.Sign(s.priv, proto.ForwardRootDigest(f))
	if err != nil {
		return nil
	}
	f.Sig = sig
	x.fwdRoot = f
	return f
}

// outsideRoot reports whether this primary signed a forward root of round
// r that leaves slot sl out: the slot takes no onion of r. Call with s.mu
// held.
func (e *sepoch) outsideRoot(r, sl uint32) bool {
	x := e.rounds[r]
	if x == nil || x.fwdRoot == nil {
		return false
	}
	for _, en := range x.fwdRoot.Entries {
		if en.Slot == sl {
			return false
		}
	}
	return true
}

// sendForwardRoot sends f to every chain server but this one, each within
// the short timeout, S_0 beside the forward. Without s.mu.
func (s *Server) sendForwardRoot(e *sepoch, f *wire.ForwardRoot) {
	var to []peer.ID
	for _, p := range e.final.Chain {
		if p != s.h.ID() {
			to = append(to, p)
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, transport.ShortTimeout)
	defer cancel()
	_, _ = s.each(ctx, to, transport.Request{Proto: ProtoRound, Type: wire.TypeForwardRoot, Body: f.Marshal(), Timeout: transport.ShortTimeout})
}

// onForwardRoot takes a primary's forward root: from the primary it
// names, of a round heldRound keeps, checked before it is decoded whole,
// at most its own slots, one a primary and round (the first). A receipt
// shown here that it leaves out is logged (matchForwardLocked).
func (s *Server) onForwardRoot(from peer.ID, body []byte) (wire.Type, []byte, error) {
	id, round, pos, err := wire.ForwardRootHead(body)
	if err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(id)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	chain := e.final.Chain
	ok := e.pos >= 0 && int(pos) < len(chain) && pos != 0 && chain[pos] == from && e.heldRound(round)
	_, have := e.fwdRoots[accountKey{round, int(pos)}]
	mine := e.clientsOf(int(pos))
	lim := proto.LimitsFor(e.final.Desc.Params, len(chain))
	s.mu.Unlock()
	if !ok {
		return 0, nil, errors.New("node: a forward root is its primary's, of a round held here")
	}
	if have {
		return wire.TypeAck, ack, nil
	}
	lim.Clients = len(mine)
	var f wire.ForwardRoot
	if err := f.Unmarshal(body, lim); err != nil {
		return 0, nil, err
	}
	if err := proto.CheckForwardRoot(&f, id, chain); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	clients := e.final.Desc.Clients
	for _, en := range f.Entries {
		if int(en.Slot) >= len(clients) || clients[en.Slot].Primary != pos {
			s.mu.Unlock()
			return 0, nil, errors.New("node: a forward root names another primary's slot")
		}
	}
	defer s.mu.Unlock()
	s.noteForwardRootLocked(e, &f)
	return wire.TypeAck, ack, nil
}

// noteForwardRootLocked keeps f, a checked forward root, as its primary's
// of its round if none is (and heldRound keeps the round), and matches
// the receipts of its primary and round shown here against it. Call with
// s.mu held.
func (s *Server) noteForwardRootLocked(e *sepoch, f *wire.ForwardRoot) {
	k := accountKey{f.Round, int(f.Server)}
	if _, have := e.fwdRoots[k]; !have && e.heldRound(f.Round) {
		if e.fwdRoots == nil {
			e.fwdRoots = map[accountKey]*wire.ForwardRoot{}
		}
		e.fwdRoots[k] = f
		e.pruneHeldLocked()
	}
	for dk, rc := range e.shown {
		if dk.round == f.Round && rc.Server == f.Server {
			s.matchRootLocked(e, dk, f)
		}
	}
}

// matchForwardLocked logs and relays the evidence against a primary whose
// receipt of the onion of k is shown here and whose forward root of k's
// round held here leaves it out. Call with s.mu held.
func (s *Server) matchForwardLocked(e *sepoch, k dryKey) {
	if r, shown := e.shown[k]; shown {
		s.matchRootLocked(e, k, e.fwdRoots[accountKey{k.round, int(r.Server)}])
	}
}

// matchRootLocked logs and relays the evidence against the primary of
// the receipt of k shown here if f, its forward root of k's round, leaves
// it out: once a primary and epoch, as the charge log keeps it (one
// record a primary, epoch and kind), so that a primary whose clients
// show a receipt a round grows nothing here (rev44 N4). Call with s.mu
// held.
func (s *Server) matchRootLocked(e *sepoch, k dryKey, f *wire.ForwardRoot) {
	r, shown := e.shown[k]
	if !shown || f == nil || f.Server != r.Server || f.Round != r.Round || f.Covers(&r) || e.fwdLogged[r.Server] {
		return
	}
	if e.fwdLogged == nil {
		e.fwdLogged = map[uint16]bool{}
	}
	e.fwdLogged[r.Server] = true
	s.log.Warn("a primary forwarded a round without an onion it receipted", "round", k.round, "slot", k.slot, "primary", e.final.Chain[r.Server].ShortString())
	ev := &wire.Charge{Kind: wire.EvForward, Number: e.v.Desc.Number, Item: wire.ForwardItem(&r, f)}
	s.noteChargeLocked(e, ev, nil, "")
}
