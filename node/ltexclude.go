package node

// Exclusion by long-term key (docs/protocol.md §8 "After a blame"): a
// named client's key evidence published, checked and applied is package
// internal/evidence's (keys.go), on disk (store bucket key-excluded).
// Every server refuses registrations from an excluded key when it is a
// primary. A primary also keeps a small record of its own clients' keys
// (key-seen): the last epoch each held its slot to the end unnamed, and
// how often its slot ran dry; the admission order (internal/intake)
// reads it. The records are package
// internal/ltkeys's (Keys, its own lock); an epoch's slots named and the
// evidence for them are blame.KeyNamed's (its own lock).

// recordClients notes, at an epoch's end, how each client of this primary
// ended it (§5.4: a dry slot lowers its key's priority; a clean epoch makes
// it a returning client). An epoch in which no round ran judges nobody. A
// slot ran dry when this primary signed it dry (held.go: its client left
// with its cover window spent, or S_0 asked for a round it could not fill),
// or, in an epoch that ended before its last round, when it holds no onion
// for the first round without a final list (a client that submits W rounds
// ahead has sent it long before) and its client did not hand over cover
// and leave.
func (s *Server) recordClients(e *sepoch) {
	s.mu.Lock()
	if e.final == nil || e.listHigh == 0 {
		s.mu.Unlock()
		return
	}
	type end struct {
		key [32]byte
		dry bool
	}
	var ends []end
	next, rounds := e.listHigh, e.final.Desc.Params.Rounds
	for i, c := range e.final.Desc.Clients {
		if int(c.Primary) != e.pos || e.keyNamed.Named(i) {
			continue
		}
		lt, ok := e.reg.LT(c.RegKey)
		if !ok {
			continue
		}
		sl := uint32(i)
		dry := e.dryEver(sl)
		if !dry && next < rounds && !e.handover.Departed[sl] && !e.handover.Has(sl, next) {
			x := e.rounds[next]
			if x == nil {
				dry = true
			} else {
				_, has := x.subs[sl]
				dry = !has
			}
		}
		ends = append(ends, end{lt.Key, dry})
	}
	number := e.final.Desc.Number
	s.mu.Unlock()
	for _, x := range ends {
		s.keys.NoteClientEnd(x.key, number, x.dry)
	}
}
