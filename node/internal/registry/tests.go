package registry

import (
	"fmt"

	"github.com/riffle-net/riffle/node/internal/intake"
)

// What package node's tests read and set directly.

// Table is the primary's table itself, for tests that build or read one:
// use it only while nothing registers.
func (r *Epoch) Table() *intake.Table { return &r.table }

// SetPhase sets the phase flags (closed, the leader's list taken, the
// final descriptor come), for tests that put an epoch in a phase.
func (r *Epoch) SetPhase(closed, listed, final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed, r.listed, r.final = closed, listed, final
}

// Listed says whether the leader's list was taken, and its slots.
func (r *Epoch) Listed() (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listed, len(r.slotRegs)
}

// Summary is the registration's state in one line, for tests that check
// what a handler changed.
func (r *Epoch) Summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("regClosed %v regs %d fwd %d slotRegs %d parsed %d", r.closed, len(r.table.Regs), len(r.fwd), len(r.slotRegs), len(r.parsed))
}
