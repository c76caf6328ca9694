// Package ltkeys is a server's records of clients' long-term keys
// (docs/protocol.md §8 "After a blame", §5.4): the keys excluded after a
// blame named their slot, for 1, 2, 4, … epochs on each repeat, and a
// primary's record of its own clients' keys (the last epoch each held its
// slot to the end unnamed, how often its slot ran dry), which the
// admission order reads. The records are cached from the server's store
// (buckets key-excluded and key-seen) and written through; Keys has its
// own lock and no I/O but the store's. Package node checks the evidence,
// decides whom to strike and when (internal/evidence keys.go,
// ltexclude.go).
package ltkeys

import (
	"log/slog"
	"sync"

	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/store"
)

// MaxKeysSeen bounds a primary's record of its clients' keys; beyond it
// the key with the oldest clean epoch is dropped.
const MaxKeysSeen = 1 << 14

// Keys is the long-term key records, cached from the store. mu is a
// leaf lock: nothing is locked while holding it.
type Keys struct {
	// St and Log are the server's store and log (set by node's
	// NewServer; Keys without a store that records keys keeps its records
	// in memory only).
	St       any
	Log      *slog.Logger
	mu       sync.Mutex
	loaded   bool
	excluded map[[32]byte]store.KeyExclusion
	seen     map[[32]byte]store.KeySeen
}

// Recorder is a store that keeps long-term key records.
type Recorder interface {
	PutKeyExclusion([32]byte, store.KeyExclusion) error
	KeyExclusions() (map[[32]byte]store.KeyExclusion, error)
	PutKeySeen([32]byte, store.KeySeen) error
	DeleteKeySeen([32]byte) error
	KeysSeen() (map[[32]byte]store.KeySeen, error)
}

// keysLocked loads the records once. Call with ks.mu held.
func (ks *Keys) keysLocked() {
	if ks.loaded {
		return
	}
	ks.loaded = true
	ks.excluded, ks.seen = map[[32]byte]store.KeyExclusion{}, map[[32]byte]store.KeySeen{}
	kr, ok := ks.St.(Recorder)
	if !ok {
		return
	}
	x, err := kr.KeyExclusions()
	if err != nil {
		ks.Log.Error("long-term key exclusions unreadable", "err", err)
	} else {
		ks.excluded = x
	}
	seen, err := kr.KeysSeen()
	if err != nil {
		ks.Log.Error("long-term key records unreadable", "err", err)
	} else {
		ks.seen = seen
	}
}

// Excluded reports whether a long-term key is refused in epoch number,
// and up to which epoch.
func (ks *Keys) Excluded(key [32]byte, number uint64) (uint64, bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keysLocked()
	x, ok := ks.excluded[key]
	return x.Until, ok && number <= x.Until
}

// Seen returns this primary's record of one of its clients' keys.
func (ks *Keys) Seen(key [32]byte) (store.KeySeen, bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keysLocked()
	r, ok := ks.seen[key]
	return r, ok
}

// Strike counts one more blame against a long-term key named in epoch
// number and returns until which epoch number it is excluded: 1, 2, 4, …
// epochs after number, capped at 2^blame.MaxExcludeShift. The record, with the
// evidence, is on disk before this returns; the key loses its clean record.
func (ks *Keys) Strike(key [32]byte, number uint64, evidence []byte) uint64 {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keysLocked()
	x := ks.excluded[key]
	x.Strikes++
	x.Until = blame.ExcludedUntil(x.Strikes, x.Until, number)
	x.Evidence = append([]byte(nil), evidence...)
	ks.excluded[key] = x
	_, hadSeen := ks.seen[key]
	delete(ks.seen, key)
	if kr, ok := ks.St.(Recorder); ok {
		if err := kr.PutKeyExclusion(key, x); err != nil {
			ks.Log.Error("long-term key exclusion not stored", "err", err)
		}
		if hadSeen {
			if err := kr.DeleteKeySeen(key); err != nil {
				ks.Log.Error("long-term key record not dropped", "err", err)
			}
		}
	}
	return x.Until
}

// NoteClientEnd records how a client of this primary ended epoch number:
// its slot ran dry (dry), or it held it to the end unnamed (a clean
// epoch, which also halves its dry count). An excluded key gets no record.
func (ks *Keys) NoteClientEnd(key [32]byte, number uint64, dry bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keysLocked()
	if x, ok := ks.excluded[key]; ok && number <= x.Until {
		return
	}
	r, known := ks.seen[key]
	if dry {
		r.Dry++
	} else {
		r.Clean, r.Dry = number, r.Dry/2
	}
	kr, _ := ks.St.(Recorder)
	if !known && len(ks.seen) >= MaxKeysSeen {
		var oldest [32]byte
		first := true
		for k, v := range ks.seen {
			if first || v.Clean < ks.seen[oldest].Clean {
				oldest, first = k, false
			}
		}
		delete(ks.seen, oldest)
		if kr != nil {
			if err := kr.DeleteKeySeen(oldest); err != nil {
				ks.Log.Error("long-term key record not dropped", "err", err)
			}
		}
	}
	ks.seen[key] = r
	if kr != nil {
		if err := kr.PutKeySeen(key, r); err != nil {
			ks.Log.Error("long-term key record not stored", "err", err)
		}
	}
}
