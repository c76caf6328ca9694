package roundblame

import (
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Ep is an epoch as a walk sees it: its final descriptor, this server's
// position in its chain, its blames, and the server's own epoch (Ref,
// for Host).
type Ep struct {
	V   *proto.View
	Pos int
	// Blames are the epoch's blames here (under the server's lock).
	Blames *Blames
	Ref    any
}

// N is the epoch's number of slots.
func (ep *Ep) N() int { return len(ep.V.Desc.Clients) }

// EntrySize is the size of an entry at server t's input.
func (ep *Ep) EntrySize(t int) int { return EntrySize(ep.V, t) }

// EntrySize is the size of an entry at server t's input in the epoch of v.
func EntrySize(v *proto.View, t int) int {
	b, k := int(v.Desc.Params.ChunkSize), int(v.Desc.Params.K)
	return mix.OnionSize(b, k, len(v.Chain)) - mix.TagSize*t
}

// Blames are one epoch's round blames at one server: the latest, and the
// settled ones before it, each of which dropped a slot (§8 "A dead
// slot"). Guarded by the server's lock.
type Blames struct {
	cur     *Blame
	settled []*Blame
	// dead are the slots a blame named, dead for the rest of the epoch,
	// with their routes.
	dead []deadRoute
	// What was named without a walk (evidence.go): a server's two signed
	// roots, a server's malformed signed batch (once an epoch each), and
	// the slots whose client signed two onions for one round.
	equivNamed, badNamed bool
	doubleNamed          map[uint32]bool
}

// NameEquivocation reports whether this is the epoch's first
// equivocation named here, and marks it named.
func (b *Blames) NameEquivocation() bool {
	first := !b.equivNamed
	b.equivNamed = true
	return first
}

// nameDouble reports whether slot's two onions are the first named here,
// and marks them named.
func (b *Blames) nameDouble(slot uint32) bool {
	first := !b.doubleNamed[slot]
	if b.doubleNamed == nil {
		b.doubleNamed = map[uint32]bool{}
	}
	b.doubleNamed[slot] = true
	return first
}

// deadRoute is one dead slot's route: pos[t] is its position at server
// t's input (pos[0] the slot), pos[m] at the last server's output.
type deadRoute struct {
	slot int
	pos  []int
}

// DeadIn returns the dead positions at server t's input (t = m: the last
// server's output).
func (b *Blames) DeadIn(t int) []int {
	var out []int
	for _, d := range b.dead {
		out = append(out, d.pos[t])
	}
	return out
}

// IsDead reports whether a slot is dead.
func (b *Blames) IsDead(slot uint32) bool {
	for _, d := range b.dead {
		if d.slot == int(slot) {
			return true
		}
	}
	return false
}

// Any reports whether a blame ever started.
func (b *Blames) Any() bool { return b.cur != nil }

// Pending reports whether a round blame runs that has not settled
// (rounds in flight wait for it).
func (b *Blames) Pending() bool { return b.cur != nil && !b.cur.Settled }

// Busy reports whether a new round blame must end the epoch instead of
// starting: one runs, or one ended the epoch. After blames that each
// dropped a slot, another may start.
func (b *Blames) Busy() bool { return b.cur != nil && !(b.cur.Settled && b.cur.Dropped) }

// Start makes bl the epoch's round blame, keeping the settled ones
// before it (each voided its round). After Busy.
func (b *Blames) Start(bl *Blame) {
	if b.cur != nil {
		b.settled = append(b.settled, b.cur)
	}
	b.cur = bl
}

// Walked reports whether round r is the round of a walk (void once it
// settles with a dead slot).
func (b *Blames) Walked(r uint32) bool {
	bl := b.Of(r)
	return bl != nil && !bl.Double
}

// Of returns the epoch's round blame of round r, or nil.
func (b *Blames) Of(r uint32) *Blame {
	if b.cur != nil && b.cur.Round == r {
		return b.cur
	}
	for _, bl := range b.settled {
		if bl.Round == r {
			return bl
		}
	}
	return nil
}

// Voided reports whether round r is the round of a blame that dropped a
// slot here (its void counts against nothing).
func (b *Blames) Voided(r uint32) bool {
	bl := b.Of(r)
	return bl != nil && bl.Dropped && !bl.Double
}
