// Package handover is a primary's queue of the cover onions its leaving
// clients hand over in one epoch (docs/protocol.md §5.4 v3). A client that
// must leave mid-epoch seals onions for the rounds after the last one it
// sealed, at most proto.HandoverMax of them and never beyond the epoch,
// and hands them to its primary, which submits each in its round as if
// the client had sent it; the epoch then ends, if at all, only when those
// run out; a client that left without, its cover window spent, ends it
// (Spent). Queue does no I/O and takes no lock: the server's mutex guards
// it. Package node's handover.go checks each onion as a submission and
// submits those whose round is admitted; departure.go ends the epoch.
package handover

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/riffle-net/riffle/internal/wire"
)

// Queue is the handed-over onions of one epoch.
type Queue struct {
	// Held holds, by slot and round, the cover onions a leaving client
	// of this primary handed over for rounds not yet admitted.
	Held map[uint32]map[uint32]wire.Submit
	// Departed marks the slots whose client handed over and left: their
	// PIR queries never come, and nobody waits for them.
	Departed map[uint32]bool
}

// Hold keeps a checked onion for its round, at most max a slot, and marks
// its slot departed. It keeps a copy of the onion: the frame goes back to
// its pool, and the onion may wait for its round a while.
func (q *Queue) Hold(sub wire.Submit, max int) error {
	if q.Held == nil {
		q.Held = map[uint32]map[uint32]wire.Submit{}
	}
	held := q.Held[sub.Slot]
	if held == nil {
		held = map[uint32]wire.Submit{}
		q.Held[sub.Slot] = held
	}
	if _, ok := held[sub.Round]; !ok && len(held) >= max {
		return fmt.Errorf("node: more than %d onions handed over for one slot", max)
	}
	if q.Departed == nil {
		q.Departed = map[uint32]bool{}
	}
	q.Departed[sub.Slot] = true
	sub.Onion = bytes.Clone(sub.Onion)
	held[sub.Round] = sub
	return nil
}

// Due takes out and returns every held onion whose round is now
// admitted, each slot's in round order: a slot's rounds up to the first
// that admit refuses, those before pruned dropped (their round went by).
func (q *Queue) Due(pruned uint32, admit func(r uint32) bool) []wire.Submit {
	var out []wire.Submit
	for slot, held := range q.Held {
		rounds := make([]uint32, 0, len(held))
		for r := range held {
			rounds = append(rounds, r)
		}
		sort.Slice(rounds, func(i, j int) bool { return rounds[i] < rounds[j] })
		for _, r := range rounds {
			if r < pruned {
				delete(held, r)
				continue
			}
			if !admit(r) {
				break
			}
			out = append(out, held[r])
			delete(held, r)
		}
		if len(held) == 0 {
			delete(q.Held, slot)
		}
	}
	return out
}

// DropOnions lets every held onion go once the epoch has ended (none is
// submitted any more), keeping the slot and round each was for: Has,
// Spent and QueriesDue answer as before.
func (q *Queue) DropOnions() {
	for _, held := range q.Held {
		for r, sub := range held {
			sub.Onion = nil
			held[r] = sub
		}
	}
}

// Has reports whether a handed-over onion waits for (slot, r).
func (q *Queue) Has(slot, r uint32) bool {
	_, ok := q.Held[slot][r]
	return ok
}

// QueriesDue counts the slots among mine whose PIR queries a round waits
// for: all but those whose client handed over and left and the dead ones.
func (q *Queue) QueriesDue(mine []uint32, dead func(slot uint32) bool) int {
	n := 0
	for _, sl := range mine {
		if !q.Departed[sl] && !dead(sl) {
			n++
		}
	}
	return n
}

// Spent returns the first slot of primary pos, in slot order, whose
// client is gone and that holds no onion for round next: neither
// submitted (has) nor handed over. Its cover window is spent (§5.4) and
// the epoch ends; a slot whose client is still connected is never judged.
func (q *Queue) Spent(clients []wire.ClientEntry, pos int, next uint32, has func(slot uint32) bool, gone func(regKey [32]byte) bool) (uint32, bool) {
	for i, c := range clients {
		sl := uint32(i)
		if int(c.Primary) != pos || has(sl) || q.Has(sl, next) || !gone(c.RegKey) {
			continue
		}
		return sl, true
	}
	return 0, false
}
