// Package registry is a server's registration of one epoch (docs/protocol.md
// §3 "Registration" v3, §4.1), from the Prepare to the final descriptor:
// the fresh keys and the entry a Prepare's answer draws (prepare.go);
// what this server committed to in its Prepare (its entry, the previous
// certificate, the window and gap, its selection value r_j) and the open
// descriptor's checks against it (chain.go); the open descriptor, the
// registration deadline and the close; a primary's own registrations
// (internal/intake's Table), its admission order and the list it signs at
// the close, and the chain servers' receipts it keeps for its clients
// (primary.go), with the receipt a chain server signs; the registrations
// forwarded by every primary and receipted here, bounded by the client
// cap each, the leader's list and the final descriptor's checks against
// all of them (chain.go). An Epoch has its own
// lock and does no I/O. Service is the registration's handlers, which
// decode, verify the costly proofs, sign, send and store here: a client's
// registration at its primary and its waits (service.go), a primary's
// forward, the leader's close and its list at a chain server
// (chainserve.go); what they ask of their server is Host. Network-free
// tests, the handlers' with a fake host.
package registry

import (
	"errors"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/intake"
)

// Epoch is a server's registration of one epoch. Its zero value is ready.
type Epoch struct {
	mu sync.Mutex

	// What the Prepare committed to: this server's entry in the
	// descriptor, the certificate of the number before, the window and
	// its gap (encoded) the descriptor signed must carry, and r_j of the
	// selection, drawn fresh at every Prepare and kept secret until the
	// close (§3 v3).
	entry  wire.GroupEntry
	prev   []byte
	window []wire.WindowRef
	gap    []byte
	cands  [][]byte
	reveal [wire.CommitSize]byte

	openBytes  []byte     // the signed open descriptor, for clients
	openSigs   [][64]byte // its signatures: an abort's certificate
	finalBytes []byte     // the signed final descriptor, for clients
	final      bool

	// table: the registrations this server took as primary, with their
	// peers, ranges, long-term keys and admission order.
	table  intake.Table
	closed bool
	// deadline: when this server received the open descriptor plus the
	// registration window; no close is taken before it.
	deadline time.Time
	fwd      map[[32]byte]wire.Forwarded // forwarded by primaries and receipted here
	// fwdPer counts the registrations receipted here per primary (at
	// most the client cap each).
	fwdPer   map[uint16]int
	slotRegs []wire.Register // final slot order
	slotPrim []uint16        // the primary of each slot, as it signed
	listed   bool            // slotRegs taken (one list an epoch)
	parsed   []*mix.Registration
	// orders and rest: the leader's list's signed orders of every
	// primary and the registrations it did not select
	// (internal/selection).
	orders []wire.Order
	rest   []wire.Forwarded
	// receipts: for this primary's own clients, the chain servers'
	// receipts of each registration, by registration key.
	receipts map[[32]byte][]wire.Receipt
	// named: a primary was named here for a signed registration that
	// does not verify.
	named bool
}

// Prepared records what this server's Prepare answer committed to.
func (r *Epoch) Prepared(entry wire.GroupEntry, prev []byte, window []wire.WindowRef, gap []byte, cands [][]byte, reveal [wire.CommitSize]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entry, r.prev, r.window, r.gap, r.cands, r.reveal = entry, prev, window, gap, cands, reveal
}

// Reveal is r_j, sent at the close.
func (r *Epoch) Reveal() [wire.CommitSize]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reveal
}

// Opened keeps the signed open descriptor body and its signatures; the
// first one sets the registration deadline, window after now.
func (r *Epoch) Opened(body []byte, sigs [][64]byte, window time.Duration, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.openBytes == nil {
		// (v3) the registration deadline as seen here: no close before
		// it. The leader starts its own window only after every server
		// has the open descriptor.
		r.deadline = now.Add(window)
	}
	r.openBytes, r.openSigs = body, sigs
}

// Offer is the signed open descriptor for a client waiting for an epoch:
// nil before it came and after the close.
func (r *Epoch) Offer() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	return r.openBytes
}

// OpenBytes is the signed open descriptor, nil before it came.
func (r *Epoch) OpenBytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.openBytes
}

// OpenSigs are the open descriptor's signatures, nil before it came.
func (r *Epoch) OpenSigs() [][64]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.openSigs
}

// Finalled keeps the signed final descriptor body; registration is closed.
func (r *Epoch) Finalled(body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finalBytes, r.final, r.closed = body, true, true
}

// FinalBytes is the signed final descriptor, nil before it came.
func (r *Epoch) FinalBytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finalBytes
}

// Closed reports whether registration closed here.
func (r *Epoch) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Deadline is the registration deadline as seen here, zero before the
// open descriptor.
func (r *Epoch) Deadline() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deadline
}

// Close closes registration on the leader's close, refused before the
// deadline: a close before it would let a leader shut an epoch on its
// first registration (n−1).
func (r *Epoch) Close(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deadline.IsZero() || now.Before(r.deadline) {
		return errors.New("node: close before the registration deadline")
	}
	r.closed = true
	return nil
}

// Parsed are the chosen registrations of the leader's list, parsed.
func (r *Epoch) Parsed() []*mix.Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parsed
}

// NameOnce reports whether this is the first naming of a primary for a
// forwarded registration that does not verify in this epoch.
func (r *Epoch) NameOnce() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := !r.named
	r.named = true
	return first
}

// RegisteredBy reports whether p registered with this primary.
func (r *Epoch) RegisteredBy(p peer.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.table.RegisteredBy(p)
}

// From is the peer that sent this primary the registration under key.
func (r *Epoch) From(key [32]byte) (peer.ID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.table.RegFrom[key]
	return p, ok
}

// LT is the long-term key a client of this primary registered key with.
func (r *Epoch) LT(key [32]byte) (intake.LT, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lt, ok := r.table.LT[key]
	return lt, ok
}

// HasLT reports whether any client of this primary gave a long-term key.
func (r *Epoch) HasLT() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.table.LT) > 0
}

// Registered counts the registrations this primary holds.
func (r *Epoch) Registered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.table.Regs)
}
