// Package closing is an epoch's closing record at a server
// (docs/protocol.md §7 v3) as steps over what the server holds of the
// epoch's rounds: the record it would state (Of), whether S_0's proposal
// agrees with its lists (Check), whether a signed record has every
// published round's list here (Whole), and the one record it signs for
// the epoch with the chain's signatures of it, until every position
// signed (Epoch, its own leaf lock). The choice is on disk before its
// signature is made (Signed). No network, no clock: package node's
// closing.go proposes, signs, sends and stores.
package closing

import (
	"fmt"
	"sync"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Round is what a server holds of one round for the epoch's closing
// record: its final list (State ClosedNone if none came here) and the
// list it signed (ClosedNone if it signed none).
type Round struct {
	Final  wire.ClosingRound
	Signed wire.ClosingRound
}

// Final is round's state as a final list l here states it (nil: none).
func Final(l *wire.RoundList) wire.ClosingRound {
	if l == nil {
		return wire.ClosingRound{}
	}
	cr := wire.ClosingRound{State: wire.ClosedPublished, List: proto.ListDigest(l)}
	if l.Void() {
		cr.State = wire.ClosedVoid
	}
	return cr
}

// Of is the record this server states of epoch id's rounds.
func Of(id [32]byte, rounds []Round) wire.Closing {
	c := wire.Closing{Epoch: id, Rounds: make([]wire.ClosingRound, len(rounds))}
	for r, x := range rounds {
		c.Rounds[r] = x.Final
	}
	return c
}

// Check reports whether proposed, S_0's rounds of a closing record,
// agree with rounds: a round stated published or void has the list held
// or signed here, a round stated without a list has no final list here.
// A round this server signed whose final list was not delivered here
// agrees: every server signed it, S_0 holds it.
func Check(rounds []Round, proposed []wire.ClosingRound) error {
	if len(proposed) != len(rounds) {
		return fmt.Errorf("node: closing of %d rounds for %d", len(proposed), len(rounds))
	}
	for r, pr := range proposed {
		switch have := rounds[r].Final; {
		case pr == have:
		case have.State == wire.ClosedNone && rounds[r].Signed == pr:
		default:
			return fmt.Errorf("node: closing states round %d as %d, this server holds %d", r, pr.State, have.State)
		}
	}
	return nil
}

// Whole reports whether every round c states published has its final
// list here: only such a record goes among the store's closing records,
// which mark an epoch taken whole (a server catches up the rest); another
// is kept with the window item.
func Whole(rounds []Round, c *wire.Closing) bool {
	for r, cr := range c.Rounds {
		if cr.State != wire.ClosedPublished {
			continue
		}
		if r >= len(rounds) || rounds[r].Final.State == wire.ClosedNone || rounds[r].Final.List != cr.List {
			return false
		}
	}
	return true
}

// Epoch is a server's side of one epoch's closing record: the record it
// signed (without signatures), the chain's signatures of a record, one a
// position (the last), whether it assembled them, and whether a record
// is stored here. Its lock is a leaf: never held while another is taken.
type Epoch struct {
	mu     sync.Mutex
	mine   *wire.Closing
	sigs   map[uint16]wire.ClosingSig
	done   bool
	closed bool
}

// Mine is the record this server signed, nil if none; never changed
// once set.
func (c *Epoch) Mine() *wire.Closing {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mine
}

// Choose makes p (its signatures dropped) the record this server signs,
// unless it chose one already; it returns the one chosen.
func (c *Epoch) Choose(p wire.Closing) *wire.Closing {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mine == nil {
		p.Sigs = nil
		c.mine = &p
	}
	return c.mine
}

// Note keeps a chain server's signature of a record, the last one of its
// position.
func (c *Epoch) Note(cs wire.ClosingSig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.note(cs)
}

// NoteOwn keeps this server's own signature, unless one of the same
// digest is kept at its position.
func (c *Epoch) NoteOwn(cs wire.ClosingSig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if have, ok := c.sigs[cs.Index]; !ok || have.Digest != cs.Digest {
		c.note(cs)
	}
}

func (c *Epoch) note(cs wire.ClosingSig) {
	if c.sigs == nil {
		c.sigs = map[uint16]wire.ClosingSig{}
	}
	c.sigs[cs.Index] = cs
}

// Assemble is the record this server signed with the signatures of all
// m chain positions, once they are here; ok is true once an epoch.
func (c *Epoch) Assemble(m int) (rec wire.Closing, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mine == nil || c.done {
		return wire.Closing{}, false
	}
	rec = *c.mine
	rec.Sigs = nil
	dg := proto.ClosingDigest(&rec)
	for i := range m {
		cs, ok := c.sigs[uint16(i)]
		if !ok || cs.Digest != dg {
			return wire.Closing{}, false
		}
		rec.Sigs = append(rec.Sigs, cs.Sig)
	}
	c.done = true
	return rec, true
}

// Closed reports whether a closing record of the epoch is stored here.
func (c *Epoch) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// SetClosed notes that a closing record of the epoch is stored here.
func (c *Epoch) SetClosed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}
