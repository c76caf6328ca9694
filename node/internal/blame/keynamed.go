package blame

import (
	"sync"

	"github.com/riffle-net/riffle/internal/wire"
)

// KeyNamed is one epoch's client slots named by a blame at this server and
// the long-term key evidence for them (docs/protocol.md §8 "After a
// blame"): a slot's key is excluded once, when the slot is named here and
// checked evidence for it is here, whichever comes second. Evidence that
// comes first waits, the first for a slot only; the caller checks it and
// bounds the slots by the epoch's. Its own leaf lock.
type KeyNamed struct {
	mu    sync.Mutex
	named map[int]bool
	ev    map[int]wire.KeyEvidence // checked, waiting for this server's verdict
	done  map[int]bool             // the key was excluded here
}

// Name notes that a blame named slot here. own is the evidence this
// server kept as the slot's primary, nil if none. It returns the evidence
// to exclude the key by now (own, else what waited), at most once a slot,
// and whether it is own, which its primary publishes.
func (k *KeyNamed) Name(slot int, own *wire.KeyEvidence) (*wire.KeyEvidence, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.named == nil {
		k.named, k.done = map[int]bool{}, map[int]bool{}
	}
	k.named[slot] = true
	if k.done[slot] {
		return nil, false
	}
	ev, isOwn := own, own != nil
	if ev == nil {
		if p, ok := k.ev[slot]; ok {
			ev = &p
		}
	}
	if ev != nil {
		k.done[slot] = true
	}
	return ev, isOwn
}

// Evidence takes a primary's checked evidence for its slot: true when the
// key is to be excluded now (the slot named here, not done yet); else it
// waits for this server's own verdict (the first for a slot), or the key
// was excluded already.
func (k *KeyNamed) Evidence(ev wire.KeyEvidence) bool {
	slot := int(ev.Slot)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.named == nil {
		k.named, k.done = map[int]bool{}, map[int]bool{}
	}
	if k.done[slot] {
		return false
	}
	if !k.named[slot] {
		if k.ev == nil {
			k.ev = map[int]wire.KeyEvidence{}
		}
		if _, ok := k.ev[slot]; !ok {
			k.ev[slot] = ev
		}
		return false
	}
	k.done[slot] = true
	return true
}

// Named reports whether a blame named slot here.
func (k *KeyNamed) Named(slot int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.named[slot]
}
