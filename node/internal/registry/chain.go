package registry

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/selection"
)

// Every chain server's side (§3 v3, §4.1): the open descriptor checked
// against the Prepare, the registrations every primary forwards and this
// server receipts, the leader's list, and the final descriptor checked
// against all of them before this server signs it.

// CheckOpen checks an open descriptor d against what this server's
// Prepare committed to, pos being its chain position: its entry, the
// previous certificate, the window, the gap (encoded by gap) and the
// candidates unaltered.
func (r *Epoch) CheckOpen(d *wire.Descriptor, pos int, gap []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !bytes.Equal(d.Group[pos].Marshal(), r.entry.Marshal()) {
		return errors.New("node: descriptor alters this server's entry")
	}
	if !bytes.Equal(d.Previous.Marshal(), r.prev) {
		return errors.New("node: descriptor's previous certificate is not the prepared one")
	}
	if !slices.Equal(d.Window, r.window) {
		return errors.New("node: descriptor's window is not the prepared one")
	}
	if !bytes.Equal(gap, r.gap) {
		return errors.New("node: descriptor's gap is not the prepared one")
	}
	if !slices.EqualFunc(d.Cands, r.cands, bytes.Equal) {
		return errors.New("node: descriptor's candidates are not the prepared ones")
	}
	return nil
}

// TakeForwarded files primary f.Primary's signed registration f, checked
// by the caller, until registration closes: a second one under its key
// must be the same, and a primary forwards at most n (the client cap).
func (r *Epoch) TakeForwarded(f *wire.Forwarded, n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("node: registration closed")
	}
	key := f.Reg.RegKey
	if old, ok := r.fwd[key]; ok {
		if !bytes.Equal(old.Reg.Marshal(), f.Reg.Marshal()) || old.Primary != f.Primary {
			return errors.New("node: another registration under this key was receipted")
		}
		return nil
	}
	if r.fwdPer == nil {
		r.fwdPer = map[uint16]int{}
	}
	if r.fwdPer[f.Primary] >= n {
		return errors.New("node: this primary forwarded as many registrations as the client cap")
	}
	if r.fwd == nil {
		r.fwd = map[[32]byte]wire.Forwarded{}
	}
	r.fwdPer[f.Primary]++
	r.fwd[key] = *f
	return nil
}

// ForwardedCount counts the registrations receipted here.
func (r *Epoch) ForwardedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.fwd)
}

// Forwarded is a copy of the registrations receipted here, by key.
func (r *Epoch) Forwarded() map[[32]byte]wire.Forwarded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[[32]byte]wire.Forwarded, len(r.fwd))
	for k, f := range r.fwd {
		out[k] = f
	}
	return out
}

// ListRefusal says why this epoch takes no leader's list now, nil if it
// does: not once ended, only after the close, only once, and never after
// the final descriptor (setup reads the list then, and a later one would
// change the slots this server signed).
func (r *Epoch) ListRefusal(ended bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listRefusalLocked(ended)
}

func (r *Epoch) listRefusalLocked(ended bool) error {
	switch {
	case ended:
		return errors.New("node: registration list for an ended epoch")
	case r.final:
		return errors.New("node: registration list after the final descriptor")
	case r.listed:
		return errors.New("node: a second registration list")
	case !r.closed:
		return errors.New("node: registration list before the close")
	}
	return nil
}

// TakeList files the leader's checked list: the chosen registrations in
// slot order with their primaries and parsed, every primary's signed order
// and the ones not selected; ListRefusal is checked again.
func (r *Epoch) TakeList(ended bool, regs []wire.Register, prims []uint16, parsed []*mix.Registration, orders []wire.Order, rest []wire.Forwarded) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.listRefusalLocked(ended); err != nil {
		return err
	}
	r.slotRegs, r.slotPrim, r.parsed, r.listed = regs, prims, parsed, true
	r.orders, r.rest = orders, rest
	return nil
}

// CheckFinalList checks a final descriptor d of view v against what came
// here, pos being this server's chain position: its reveal is the r_j
// drawn here (every reveal matching its commitment is the caller's
// proto.CheckReveals), and it lists as many clients as the leader's list.
func (r *Epoch) CheckFinalList(d *wire.Descriptor, pos int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.Reveals[pos] != r.reveal {
		return errors.New("node: final descriptor carries another reveal for this server")
	}
	if len(r.slotRegs) != len(d.Clients) {
		return fmt.Errorf("node: final descriptor lists %d clients, %d registrations received", len(d.Clients), len(r.slotRegs))
	}
	return nil
}

// CheckSelection checks that a final descriptor d over m chain servers
// keeps every registration receipted here, unless it is full and keeps
// its primary's quota (proto.CheckReceipted), and that its client list is
// the rule's selection, recomputed here from the leader's list
// (internal/selection).
func (r *Epoch) CheckSelection(id [32]byte, d *wire.Descriptor, m int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := proto.CheckReceipted(d.Clients, r.fwd, r.orders, d.Params.MaxClients, m); err != nil {
		return err
	}
	return selection.Check(id, proto.SelectionBeta(d.Reveals), d.Clients, r.slotRegs, r.slotPrim, r.rest, r.orders, d.Params.MaxClients, m)
}

// CheckSlots checks each slot of a final descriptor d against the
// leader's list (key, exchange key, hash and primary as it signed), that
// it names this server (pos) as primary only of clients registered here,
// and, unless kept is false, that it keeps every registration this primary
// accepted unless full and at its quota (proto.CheckPrimaryKept).
func (r *Epoch) CheckSlots(d *wire.Descriptor, pos, m int, kept bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range d.Clients {
		reg := &r.slotRegs[i]
		if reg.RegKey != c.RegKey || reg.XKey != c.XKey || sha256.Sum256(reg.Reg) != c.RegHash || r.slotPrim[i] != c.Primary {
			return fmt.Errorf("node: final descriptor slot %d does not match its registration", i)
		}
		if int(c.Primary) == pos {
			if _, ok := r.table.Regs[c.RegKey]; !ok {
				return fmt.Errorf("node: slot %d names this server as primary for a client it never registered", i)
			}
		}
	}
	if !kept {
		return nil
	}
	return proto.CheckPrimaryKept(d.Clients, r.table.Regs, r.table.Order, d.Params.MaxClients, m)
}
