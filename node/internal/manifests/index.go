package manifests

import (
	"log/slog"
	"sync"
	"time"

	"github.com/riffle-net/riffle/store"
)

// Index is what one epoch's index takes at a server (node's sepoch.man):
// the caps (Caps) and, for each round the caps are done with, the ids it
// took, which the round's request list carries. mu is a leaf lock. Once
// Flush ran (the epoch is over) every round added is taken at once, as
// no earlier round will be published any more.
type Index struct {
	mu      sync.Mutex
	caps    Caps
	flushed bool
	taken   map[uint32][][32]byte // by round, set once the round is done
}

// Add records round r's candidates in an epoch of R rounds of chunk
// size B and returns what the caps let into the index now (Caps.Add,
// and Caps.Flush once the epoch is over); their rounds are done.
func (ix *Index) Add(R, B, r uint32, cands []Cand) []Round {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.caps.R == 0 {
		ix.caps.R, ix.caps.B = R, B
	}
	rs := ix.caps.Add(r, cands)
	if ix.flushed {
		rs = append(rs, ix.caps.Flush()...)
	}
	ix.note(rs)
	return rs
}

// Flush takes every waiting round (Caps.Flush): the epoch is over.
func (ix *Index) Flush() []Round {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.flushed = true
	rs := ix.caps.Flush()
	ix.note(rs)
	return rs
}

// note marks the rounds of rs done with the ids they took. Call with mu
// held.
func (ix *Index) note(rs []Round) {
	if len(rs) > 0 && ix.taken == nil {
		ix.taken = map[uint32][][32]byte{}
	}
	for _, mr := range rs {
		var ids [][32]byte
		for _, c := range mr.Cands {
			ids = append(ids, c.ID)
		}
		ix.taken[mr.Round] = ids
	}
}

// Taken are the ids the index took in round r, and whether the round is
// done (every earlier round published here or listed final).
func (ix *Index) Taken(r uint32) (ids [][32]byte, done bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ids, done = ix.taken[r]
	return ids, done
}

// Store is the part of the server's store the index writes.
type Store interface {
	GetChunk(id [32]byte) ([]byte, error)
	PutManifests(mans []store.Manifest, index []store.IndexEntry) error
}

// Put stores what the index took in rounds rs of epoch, at the current
// second (the index keeps seconds); errors are logged.
func Put(st Store, log *slog.Logger, epoch [32]byte, rs []Round) {
	now := time.Unix(time.Now().Unix(), 0)
	for _, mr := range rs {
		if len(mr.Cands) == 0 {
			continue
		}
		mans, index, err := Records(epoch, mr, now, st.GetChunk)
		if err != nil {
			log.Error("index manifests", "round", mr.Round, "err", err)
		}
		if err := st.PutManifests(mans, index); err != nil {
			log.Error("index manifests", "round", mr.Round, "err", err)
		}
	}
}
