package chargelog

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
)

// Evidence that comes before the certificate of its number (a relay that
// outruns the certificate's push, a server catching up) cannot be judged
// yet: it was dropped, and a server that took the certificate first
// counted what a server that took the evidence first never did, for good
// (the budgets, and so the chains and leaders, split). It is held, within
// a budget per sender, and judged when its number's certificate comes
// (Rejudge), so that the charges are the same whatever the order of
// arrival (TestLogReplayAgrees).
const (
	// PendPer bounds the evidence held for a sender.
	PendPer = 4
	// PendMax bounds the evidence held in all (PendPer for each of a
	// group of m_max = 8 servers, twice).
	PendMax = 64
)

// pend is evidence waiting for its number's certificate.
type pend struct {
	from  peer.ID
	epoch [32]byte
	ev    wire.Charge
}

// Pend holds ev, evidence of epoch id from a server of the group, until a
// certificate of its number that names id comes; top is the last number certified here: evidence of a
// number more than SeenKeep below it is dropped, as too old to leave
// anyone out. It reports whether ev is held.
func (rs *Log) Pend(from peer.ID, id [32]byte, ev *wire.Charge, top uint64) bool {
	if ev.Number+SeenKeep <= top {
		return false
	}
	key := blame.ChargeKey(ev)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	kept, mine := rs.pending[:0], 0
	for _, q := range rs.pending {
		if q.ev.Number+SeenKeep <= top {
			continue
		}
		kept = append(kept, q)
		if q.from == from {
			mine++
		}
	}
	rs.pending = kept
	for i := range rs.pending {
		if q := &rs.pending[i]; blame.ChargeKey(&q.ev) == key {
			// The same object: the attestations add up.
			blame.MergeAttests(&q.ev, ev.Attests)
			return true
		}
	}
	if mine >= PendPer || len(rs.pending) >= PendMax {
		return false
	}
	rs.pending = append(rs.pending, pend{from: from, epoch: id, ev: *ev})
	return true
}

// Pending is how much evidence waits for its certificate (tests).
func (rs *Log) Pending() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.pending)
}

// takePending removes and returns the evidence of number n and epoch id
// held for its certificate. Call with rs.mu held.
func (rs *Log) takePending(n uint64, id [32]byte) []wire.Charge {
	var out []wire.Charge
	kept := rs.pending[:0]
	for _, q := range rs.pending {
		if q.ev.Number == n && q.epoch == id {
			out = append(out, q.ev)
		} else {
			kept = append(kept, q)
		}
	}
	rs.pending = kept
	return out
}
