package roundblame

import (
	"log/slog"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/store"
)

// Recorder is a store that keeps blame records.
type Recorder interface {
	PutBlame(store.BlameRecord) error
	Blames() ([]store.BlameRecord, error)
}

// Excluded is a server's memory of the culprit servers a blame named
// (§8 "After a blame"): never in a chain here again. Its own lock: the
// chain is chosen without the server's.
type Excluded struct {
	// St and Log are the server's store (a Recorder, or none) and log,
	// for the culprits' records; set before first use.
	St  any
	Log *slog.Logger

	mu      sync.Mutex
	servers map[peer.ID]bool
	// loaded: servers holds the culprits of the stored records too (a
	// restart keeps them out).
	loaded sync.Once
}

// Records returns the blame records kept here (tests, operators).
func (x *Excluded) Records() ([]store.BlameRecord, error) {
	br, ok := x.St.(Recorder)
	if !ok {
		return nil, nil
	}
	return br.Blames()
}

// Has reports whether a peer was named as a culprit server.
func (x *Excluded) Has(p peer.ID) bool {
	x.Load()
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.servers[p]
}

// Load adds the culprit servers of the stored blame records, once.
func (x *Excluded) Load() { x.loaded.Do(x.load) }

func (x *Excluded) load() {
	if x.St == nil {
		return
	}
	recs, err := x.Records()
	if err != nil {
		x.Log.Error("round blame: stored records unreadable", "err", err)
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, r := range recs {
		if r.Role != "server" {
			continue
		}
		if p, err := peer.Decode(r.PeerID); err == nil {
			if x.servers == nil {
				x.servers = map[peer.ID]bool{}
			}
			x.servers[p] = true
		}
	}
}

// Add names p a culprit server.
func (x *Excluded) Add(p peer.ID) {
	x.mu.Lock()
	if x.servers == nil {
		x.servers = map[peer.ID]bool{}
	}
	x.servers[p] = true
	x.mu.Unlock()
}
