package node

import (
	"slices"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Which accounts count (docs/protocol.md §5.4, "The root is binding"): an
// asker counts a primary's account of a round only when it is final and
// binds the primary to what it forwarded, and keeps a final account as
// the primary's word on the round ever after, so that a receipt it
// leaves out, shown whenever, is evidence (wire.EvAccount).

// accountGiven reports whether a, primary j's checked account of round r,
// counts as given, the receipts want shown here when it was asked. It
// must be final (signed once the epoch ended there: no onion is taken
// after, so it names every onion the primary receipted) and cover want.
// Saying it forwarded the round, it must carry its forward root of it,
// which is kept and matched like one sent and must cover want too;
// saying it did not, some slot of j must hold no receipt in it, since a
// primary forwards a round and signs its root once every live slot is in
// (forwardIfReady) and takes no onion for a dead one. S_0 forwards
// nothing. A final account is kept (noteAccountLocked) whether it counts
// or not. Without s.mu.
func (s *Server) accountGiven(e *sepoch, a *wire.Account, r uint32, j int, want []wire.OnionReceipt) bool {
	if !a.Ended {
		return false // asked again: the primary's end comes within a hop
	}
	s.mu.Lock()
	chain, id, clients := e.final.Chain, e.final.ID, e.final.Desc.Clients
	mine := e.clientsOf(j)
	s.noteAccountLocked(e, a)
	s.mu.Unlock()
	if slices.ContainsFunc(want, func(rc wire.OnionReceipt) bool { return !a.Covers(&rc) }) {
		return false
	}
	if j == 0 {
		return true
	}
	if !a.Forwarded {
		in := map[uint32]bool{}
		for _, en := range a.Entries {
			in[en.Slot] = true
		}
		return slices.ContainsFunc(mine, func(sl uint32) bool { return !in[sl] })
	}
	f := a.Root
	if f == nil || f.Round != r || int(f.Server) != j || len(f.Entries) > len(mine) || proto.CheckForwardRoot(f, id, chain) != nil {
		return false
	}
	for _, en := range f.Entries {
		if int(en.Slot) >= len(clients) || int(clients[en.Slot].Primary) != j {
			return false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteForwardRootLocked(e, f)
	return !slices.ContainsFunc(want, func(rc wire.OnionReceipt) bool { return !f.Covers(&rc) })
}

// noteAccountLocked keeps a, a checked final account, as its primary's of
// its round if none is (and heldRound keeps the round), and matches the
// receipts of its primary and round shown here against it. Call with
// s.mu held.
func (s *Server) noteAccountLocked(e *sepoch, a *wire.Account) {
	k := accountKey{a.Round, int(a.Server)}
	if _, have := e.accounts[k]; !have && e.heldRound(a.Round) {
		if e.accounts == nil {
			e.accounts = map[accountKey]*wire.Account{}
		}
		kept := *a
		kept.Root = nil // held in fwdRoots, if it checks
		e.accounts[k] = &kept
		e.pruneHeldLocked()
	}
	for dk, rc := range e.shown {
		if dk.round == a.Round && rc.Server == a.Server {
			s.matchAccountLocked(e, dk)
		}
	}
}

// matchAccountLocked logs and relays the evidence against the primary of
// the receipt of k shown here if its final account of k's round held
// here leaves it out, once a primary and epoch (as matchRootLocked). Call
// with s.mu held.
func (s *Server) matchAccountLocked(e *sepoch, k dryKey) {
	r, shown := e.shown[k]
	if !shown {
		return
	}
	a := e.accounts[accountKey{k.round, int(r.Server)}]
	if a == nil || !a.Ended || a.Covers(&r) || e.accLogged[r.Server] {
		return
	}
	if e.accLogged == nil {
		e.accLogged = map[uint16]bool{}
	}
	e.accLogged[r.Server] = true
	s.log.Warn("a primary gave its final account of a round without an onion it receipted", "round", k.round, "slot", k.slot, "primary", e.final.Chain[r.Server].ShortString())
	ev := &wire.Charge{Kind: wire.EvAccount, Number: e.v.Desc.Number, Item: wire.AccountItem(&r, a)}
	s.noteChargeLocked(e, ev, nil, "")
}
