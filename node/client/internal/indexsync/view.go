package indexsync

import (
	"maps"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/store"
)

// What the client reads and sets of the copy, with its lock held.

// Synced reports whether a sync of this run succeeded; MarkSynced notes
// one.
func (ic *Copy) Synced() bool { return ic.synced }
func (ic *Copy) MarkSynced()  { ic.synced = true }

// SetHours sets the group's index retention, from the last descriptor.
func (ic *Copy) SetHours(h uint32) { ic.hours = h }

// SetClock replaces the copy's clock (tests).
func (ic *Copy) SetClock(clock func() time.Time) { ic.clock = clock }

// SetCursor sets the copy's cursor at server p (tests: a stale one).
func (ic *Copy) SetCursor(p peer.ID, n uint64) {
	ic.Load()
	ic.cursors[p] = n
}

// Entries is the copy's entries; EntryMap and Manifests copies of its
// entries and manifests by id.
func (ic *Copy) Entries() []store.IndexEntry {
	out := make([]store.IndexEntry, 0, len(ic.entries))
	for _, e := range ic.entries {
		out = append(out, e)
	}
	return out
}

func (ic *Copy) EntryMap() map[[32]byte]store.IndexEntry { return maps.Clone(ic.entries) }
func (ic *Copy) Manifests() map[[32]byte][]byte          { return maps.Clone(ic.mans) }

// Manifest is the copy's manifest id.
func (ic *Copy) Manifest(id [32]byte) ([]byte, bool) {
	b, ok := ic.mans[id]
	return b, ok
}

// Fill keeps manifest b of id, asked of the chain's other servers, in
// memory (not stored: the next epoch's sync checks it again).
func (ic *Copy) Fill(id [32]byte, b []byte) {
	ic.Load()
	ic.mans[id] = b
	if _, ok := ic.seen[id]; !ok {
		ic.seen[id] = ic.now()
	}
}
