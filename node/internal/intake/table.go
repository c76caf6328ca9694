// Package intake is a primary's intake of client registrations for one
// epoch (docs/protocol.md §3 "Registration", §8 "After a blame", §5.4):
// the registrations it holds, with the peer, address range and long-term
// key each came with (table.go), the bounds checked before a
// registration's proofs (at most 2·n_max held, n_max/2 first-time keys of
// one address range, n_max first-time keys in all), and the admission
// order that picks n_max of them at the registration deadline
// (admission.go), returning clients first; and the checks of a client's
// signed onion, at its primary and forwarded at S_0 (§5.1, submit.go). It
// does no I/O and takes no lock: package registry guards a Table.
// Package node's intake.go checks the registration and its long-term key,
// forwards it and files the onions.
package intake

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// LT is what a primary keeps of one registration's long-term key.
type LT struct {
	Key [32]byte
	Sig [64]byte
}

// Table is a primary's registrations of one epoch, by registration key.
type Table struct {
	// Regs: the registrations accepted here as primary.
	Regs map[[32]byte]wire.Register
	// RegSig is this primary's signature of each registration it took
	// (§8: a forwarded registration whose proofs fail is evidence
	// against its primary).
	RegSig map[[32]byte][64]byte
	// LT is, for this primary's own clients, each registration's
	// long-term key and signature: kept here and published only when a
	// blame names the slot (node/internal/evidence keys.go).
	LT map[[32]byte]LT
	// LTTaken: the long-term keys registered here this epoch (one
	// registration each).
	LTTaken map[[32]byte]bool
	// RegRange is the address range each registration here came from,
	// for the admission lottery.
	RegRange map[[32]byte]string
	// Order is this primary's admission order, fixed at its
	// registration deadline or its close, at most n_max.
	Order [][32]byte
	// RangeN counts the first-time keys registered here per address
	// range.
	RangeN map[string]int
	// RegFrom is, for this primary's own clients, the peer that sent
	// each registration: only the primary sees it (§4.1), and only to
	// exclude a culprit from the next epoch.
	RegFrom map[[32]byte]peer.ID
}

// Room says whether the table takes one more registration of a
// first-time key from address range rng, or of a returning client, before
// its proofs are checked, n being n_max: at most 2·n_max held until the
// admission order (returning clients first) picks n_max, at most n_max/2
// first-time keys of one range (IPv4 /24, IPv6 /48), so that one range
// cannot fill the intake, and at most n_max first-time keys in all, so
// that four ranges cannot either: the other n_max places stay for
// returning clients (TestFourRangesLeaveRoom).
func (t *Table) Room(n int, rng string, returning bool) error {
	if len(t.Regs) >= 2*n {
		return errors.New("node: epoch full")
	}
	if returning {
		return nil
	}
	if t.RangeN[rng] >= max(1, n/2) {
		return fmt.Errorf("node: registrations from address range %s full in this epoch", rng)
	}
	fresh := 0
	for _, c := range t.RangeN {
		fresh += c
	}
	if fresh >= n {
		return errors.New("node: epoch full for first-time keys (the rest is kept for returning clients)")
	}
	return nil
}

// Take files registration r from peer from, signed sig as forwarded by
// this primary, with its long-term key lt, from address range rng. Its
// long-term key takes one registration an epoch. Past the deadline (the
// order fixed), it goes after the ordered ones, in arrival order. The
// caller checked Room and the order's room first.
func (t *Table) Take(r wire.Register, from peer.ID, sig [64]byte, lt LT, rng string, returning bool) error {
	if t.LTTaken[lt.Key] {
		return errors.New("node: this long-term key already registered in this epoch")
	}
	if t.Regs == nil {
		t.Regs = map[[32]byte]wire.Register{}
	}
	if t.RegFrom == nil {
		t.RegFrom = map[[32]byte]peer.ID{}
	}
	if t.LT == nil {
		t.RegSig, t.LT, t.LTTaken, t.RegRange = map[[32]byte][64]byte{}, map[[32]byte]LT{}, map[[32]byte]bool{}, map[[32]byte]string{}
	}
	t.Regs[r.RegKey] = r
	t.RegFrom[r.RegKey] = from
	t.RegSig[r.RegKey] = sig
	// Kept here only: the long-term signature goes to no other server
	// unless a blame names this client's slot.
	t.LT[r.RegKey] = lt
	t.LTTaken[lt.Key] = true
	t.RegRange[r.RegKey] = rng
	if !returning {
		if t.RangeN == nil {
			t.RangeN = map[string]int{}
		}
		t.RangeN[rng]++
	}
	if t.Order != nil {
		t.Order = append(t.Order, r.RegKey)
	}
	return nil
}

// Fix fixes the admission order once to order's first n registrations;
// the rest are dropped (their clients are told the epoch is full).
func (t *Table) Fix(order [][32]byte, n int) {
	if t.Order != nil {
		return
	}
	if len(order) > n {
		for _, k := range order[n:] {
			delete(t.Regs, k)
			delete(t.RegFrom, k)
			delete(t.RegSig, k)
			delete(t.LT, k)
			delete(t.RegRange, k)
		}
		order = order[:n]
	}
	t.Order = append(make([][32]byte, 0, len(order)), order...)
}

// RegisteredBy reports whether p registered with this primary.
func (t *Table) RegisteredBy(p peer.ID) bool {
	for _, q := range t.RegFrom {
		if q == p {
			return true
		}
	}
	return false
}

// Candidates are the table's registrations as the admission order sees
// them; seen says, for a long-term key with a record here, whether its
// slot ran dry since its last clean epoch.
func (t *Table) Candidates(seen func(key [32]byte) (dry, ok bool)) []Candidate {
	cs := make([]Candidate, 0, len(t.Regs))
	for k := range t.Regs {
		c := Candidate{Reg: k, Range: t.RegRange[k]}
		if lt, ok := t.LT[k]; ok {
			// A record exists once the key ended an epoch here
			// cleanly or ran dry.
			if dry, ok := seen(lt.Key); ok {
				c.Dry, c.Returning = dry, !dry
			}
		}
		cs = append(cs, c)
	}
	return cs
}
