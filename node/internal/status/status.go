// Package status is what a server's watch loop keeps between samples
// for its operator: the roster as last logged, to say who joined and who
// left, and the timing of the current epoch's rounds, for the status's
// mean round time and throughput (docs/protocol.md §9 "Costs"). Nothing
// in it names a client. Watch has its own leaf lock and sends nothing;
// its loop (loop.go) samples the server through a Sampler, logs the
// roster's changes and times the rounds; package node's server_status.go
// is the sampler and builds the status.
package status

import (
	"sync"
	"time"
)

// Watch is the watch loop's memory.
type Watch struct {
	mu      sync.Mutex
	members map[string]string // peer id → nick, as last logged
	epoch   [32]byte          // the epoch being timed
	since   time.Time         // when its first round was seen
	rounds0 uint32            // its round count then
	rounds  uint32
	at      time.Time // when rounds was last seen to change
}

// Roster takes the live roster now (peer id → nick) and returns who
// joined and who left since the last sample.
func (w *Watch) Roster(now map[string]string) (joined, left map[string]string) {
	w.mu.Lock()
	before := w.members
	w.members = now
	w.mu.Unlock()
	joined, left = map[string]string{}, map[string]string{}
	for id, nick := range now {
		if _, ok := before[id]; !ok {
			joined[id] = nick
		}
	}
	for id, nick := range before {
		if _, ok := now[id]; !ok {
			left[id] = nick
		}
	}
	return joined, left
}

// Rounds takes the current epoch's count of rounds with a final list,
// high, seen at now: a new epoch starts its timing afresh.
func (w *Watch) Rounds(epoch [32]byte, high uint32, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epoch != epoch {
		w.epoch, w.since, w.rounds0, w.rounds, w.at = epoch, now, high, high, now
		return
	}
	if high != w.rounds {
		w.rounds, w.at = high, now
	}
}

// Rate is epoch's mean round time and its throughput, the chunk bytes
// its n slots of chunk bytes carry a second, over the rounds seen since
// its timing began; zero until a round has come.
func (w *Watch) Rate(epoch [32]byte, n, chunk int) (time.Duration, float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epoch != epoch || w.rounds <= w.rounds0 {
		return 0, 0
	}
	el := w.at.Sub(w.since)
	k := time.Duration(w.rounds - w.rounds0)
	return el / k, float64(int(k)*n*chunk) / el.Seconds()
}
