package blame

import (
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
)

// A duplicate U or P at setup (docs/protocol.md §4.1 v3): the value
// repeats at two positions of one proven list, and nothing in the lists
// says which of the two clients copied the other. Every chain server
// signs an abort naming the value and the two slots, and the two clients
// have a window to prove knowledge of the value's discrete log. Then, at
// every server, from the same proofs:
//
//   - a client whose proof verifies is honest unless the other proves too
//     (two clients that know one discrete log act together: both are
//     culprits);
//   - a client that answers with a proof that does not verify is a
//     culprit (an honest client answers only when it holds the value);
//   - a client silent past the deadline is only left out of the next
//     epoch, with no strike (a network adversary could have cut it off).

// Dup is an epoch's duplicate-share abort at one server: the abort with
// the chain servers' signatures as they come, and the two clients'
// answers. It takes no lock: node's server mutex guards it.
type Dup struct {
	Abort  wire.DupAbort // Sigs: one per chain server, zero until seen
	Value  *group.Element
	Done   bool              // verdict taken
	proved map[uint32]bool   // slot → its proof verified
	failed map[uint32]bool   // slot → it answered with a proof that fails
	proofs map[uint32][]byte // slot → its DupProof, evidence for the record
}

// NewDup returns the state of abort a of value.
func NewDup(a wire.DupAbort, value *group.Element) *Dup {
	return &Dup{Abort: a, Value: value, proved: map[uint32]bool{}, failed: map[uint32]bool{}, proofs: map[uint32][]byte{}}
}

// Signed reports whether every chain server's signature is in (what a
// client waits for before it answers).
func (d *Dup) Signed() bool {
	for _, sg := range d.Abort.Sigs {
		if sg == [64]byte{} {
			return false
		}
	}
	return true
}

// Names reports whether the abort names slot.
func (d *Dup) Names(slot uint32) bool { return slot == d.Abort.SlotA || slot == d.Abort.SlotB }

// Answered reports whether slot has answered: one answer a slot.
func (d *Dup) Answered(slot uint32) bool { return d.proved[slot] || d.failed[slot] }

// Proved and Failed report slot's answer: a proof that verified, or
// one that did not.
func (d *Dup) Proved(slot uint32) bool { return d.proved[slot] }
func (d *Dup) Failed(slot uint32) bool { return d.failed[slot] }

// Answers is how many answers were taken.
func (d *Dup) Answers() int { return len(d.proved) + len(d.failed) }

// Answer takes slot's first answer before the verdict: whether its proof
// verified, and the proof's message, kept as evidence.
func (d *Dup) Answer(slot uint32, verified bool, proof []byte) {
	if d.Done || d.Answered(slot) {
		return
	}
	if verified {
		d.proved[slot] = true
	} else {
		d.failed[slot] = true
	}
	if len(proof) > 0 {
		d.proofs[slot] = append([]byte(nil), proof...)
	}
}

// DupCulprit is a client slot the verdict names.
type DupCulprit struct {
	Slot uint32
	Why  string
}

// Verdict applies the rules to the answers in and closes the abort to
// more: the slots named, the silent slots (left out of the next epoch,
// no strike), and the evidence (the abort, then each answer's proof).
func (d *Dup) Verdict() (culprits []DupCulprit, silent []uint32, evidence [][]byte) {
	d.Done = true
	a, b := d.Abort.SlotA, d.Abort.SlotB
	evidence = [][]byte{d.Abort.Marshal()}
	for _, p := range [][2]uint32{{a, b}, {b, a}} {
		slot, other := p[0], p[1]
		switch {
		case d.failed[slot]:
			culprits = append(culprits, DupCulprit{slot, "setup: its share repeats another and its proof of knowledge does not verify"})
		case d.proved[slot] && d.proved[other]:
			culprits = append(culprits, DupCulprit{slot, "setup: it and another client both know the discrete log of one repeated share"})
		case !d.proved[slot]:
			silent = append(silent, slot)
		}
		if pr, ok := d.proofs[slot]; ok {
			evidence = append(evidence, pr)
		}
	}
	return culprits, silent, evidence
}

// LeftOut is the client peers a primary leaves out, without a strike,
// after a duplicate they did not answer for: each refused up to an epoch
// number. Bounded by the epochs still ahead: at most two peers a
// duplicate, and an entry goes once a later verdict comes past its end.
type LeftOut map[peer.ID]uint64

// Leave leaves p out up to epoch number until, the verdict being of
// epoch until − 1, and drops the entries that end before that epoch.
func (l LeftOut) Leave(p peer.ID, until uint64) {
	for q, u := range l {
		if u+1 < until {
			delete(l, q)
		}
	}
	l[p] = until
}

// Admit refuses p at epoch number if it is left out there.
func (l LeftOut) Admit(p peer.ID, number uint64) error {
	if until, ok := l[p]; ok && number <= until {
		return errors.New("node: this client is left out of this epoch (it did not answer for a repeated share)")
	}
	return nil
}
