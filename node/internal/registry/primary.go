package registry

import (
	"errors"
	"io"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/selection"
)

// A primary's side (§3, §8, §5.4): its clients' registrations, held until
// its admission order picks n_max at the deadline, the list it signs at
// the close, and the chain servers' receipts its clients fetch.

// Room says whether this primary takes one more registration, before its
// proofs: registration open, the intake's bounds (intake.Table.Room) and,
// once the admission order is fixed, a place in it; n is n_max.
func (r *Epoch) Room(n int, rng string, returning bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.roomLocked(n, rng, returning)
}

func (r *Epoch) roomLocked(n int, rng string, returning bool) error {
	if r.closed {
		return errors.New("node: registration closed")
	}
	if err := r.table.Room(n, rng, returning); err != nil {
		return err
	}
	if r.table.Order != nil && len(r.table.Order) >= n {
		// Past the deadline, the admission order is fixed and full.
		return errors.New("node: epoch full")
	}
	return nil
}

// Take files a checked registration reg from peer from, signed sig as
// forwarded by this primary, with its long-term key lt, from address
// range rng, after Room again.
func (r *Epoch) Take(n int, reg wire.Register, from peer.ID, sig [64]byte, lt intake.LT, rng string, returning bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.roomLocked(n, rng, returning); err != nil {
		return err
	}
	return r.table.Take(reg, from, sig, lt, rng, returning)
}

// AdmissionOrder is this primary's order of its registrations
// (internal/intake's), seen telling of a long-term key's record here
// whether its slot ran dry, at most intake.RangeCap(quota) first-time keys
// of one range ahead. Without randomness it falls back on registration
// keys and returns the error too, for the log.
func (r *Epoch) AdmissionOrder(quota int, seen func(key [32]byte) (dry, ok bool), rnd io.Reader) ([][32]byte, error) {
	r.mu.Lock()
	cs := r.table.Candidates(seen)
	r.mu.Unlock()
	out, err := intake.Order(cs, intake.RangeCap(quota), rnd)
	if err != nil {
		out = intake.KeyOrder(cs)
	}
	return out, err
}

// FixOrder fixes the admission order once, at this primary's deadline
// or its close, to the first n of AdmissionOrder; the rest are dropped
// (their clients are told the epoch is full). The error is
// AdmissionOrder's, for the log.
func (r *Epoch) FixOrder(n, quota int, seen func(key [32]byte) (dry, ok bool), rnd io.Reader) error {
	r.mu.Lock()
	fixed := r.table.Order != nil
	r.mu.Unlock()
	if fixed {
		return nil
	}
	order, err := r.AdmissionOrder(quota, seen, rnd)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.table.Fix(order, n) // a no-op if fixed meanwhile
	return err
}

// Receipt is chain server pos's signed receipt of the forwarded
// registration f of epoch id (§3 v3): its client keeps it, and the server
// refuses a final descriptor that leaves f out while its primary's quota
// is not met.
func Receipt(priv crypto.PrivKey, id [32]byte, pos int, f *wire.Forwarded) (wire.Receipt, error) {
	rc := wire.Receipt{Epoch: id, Server: uint16(pos), RegKey: f.Reg.RegKey, RegHash: proto.RegHash(&f.Reg)}
	sig, err := proto.Sign(priv, proto.ReceiptDigest(&rc))
	rc.Sig = sig
	return rc, err
}

// Ordered reports whether the registration under key is in the fixed
// admission order.
func (r *Epoch) Ordered(key [32]byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.table.Regs[key]
	return ok && r.table.Order != nil
}

// List is this primary's registration list of epoch id at the close, it
// being chain position pos: its registrations in its admission order,
// each as it signed it, the order signed as a whole (internal/selection),
// and r_j revealed now, after the deadline.
func (r *Epoch) List(priv crypto.PrivKey, id [32]byte, pos int) (wire.RegList, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, err := selection.SignOrder(priv, id, pos, r.table.Order)
	if err != nil {
		return wire.RegList{}, err
	}
	rl := wire.RegList{Epoch: id, Reveal: r.reveal, Orders: []wire.Order{o}}
	for _, k := range r.table.Order {
		rl.Regs = append(rl.Regs, wire.Forwarded{Primary: uint16(pos), Reg: r.table.Regs[k], Sig: r.table.RegSig[k]})
	}
	return rl, nil
}

// KeepReceipts keeps the chain servers' receipts of this primary's
// registration under key, for its client.
func (r *Epoch) KeepReceipts(key [32]byte, got []wire.Receipt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.receipts == nil {
		r.receipts = map[[32]byte][]wire.Receipt{}
	}
	r.receipts[key] = got
}

// Receipts are the receipts kept of the registration under key, if from
// sent it here.
func (r *Epoch) Receipts(key [32]byte, from peer.ID) ([]wire.Receipt, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.table.RegFrom[key]; !ok || p != from {
		return nil, false
	}
	return r.receipts[key], true
}
