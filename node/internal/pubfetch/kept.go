package pubfetch

import (
	"fmt"
	"sync"
)

// Serves bounds the copies of one round's publication a server hands
// to one chain position (a retry after a lost transfer, not a flood).
const Serves = 2

// Kept is an epoch's publications kept for the chain, by round: the last
// server's signed publication as it came here, kept until the round's
// final list is here for a chain server that lacks it, how often it went
// to each position, whether this server asked S_0 for it, and S_0's
// watch for it. mu is a leaf lock. The server keeps a round's
// publication only for a round it admitted, and drops it once the
// round's list is final or the round pruned; the rest is a few bytes a
// round, kept with the epoch.
type Kept struct {
	mu       sync.Mutex
	raw      map[uint32][]byte
	served   map[uint32]map[int]int
	fetching map[uint32]bool
	watch    map[uint32]chan struct{}
}

// Keep keeps a copy of round r's publication raw.
func (k *Kept) Keep(r uint32, raw []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.raw == nil {
		k.raw = map[uint32][]byte{}
	}
	k.raw[r] = append([]byte(nil), raw...)
}

// Drop drops round r's publication: its list is final (nobody signs it
// without the publication) or its bulk state dropped.
func (k *Kept) Drop(r uint32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.raw, r)
}

// DropAll drops every round's publication (the epoch ended).
func (k *Kept) DropAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.raw)
}

// serve hands round r's publication to chain position pos, at most
// Serves times.
func (k *Kept) serve(r uint32, pos int) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	raw := k.raw[r]
	if raw == nil {
		return nil, fmt.Errorf("node: no publication of round %d kept here", r)
	}
	if k.served[r][pos] >= Serves {
		return nil, fmt.Errorf("node: publication of round %d handed to position %d already", r, pos)
	}
	if k.served == nil {
		k.served = map[uint32]map[int]int{}
	}
	if k.served[r] == nil {
		k.served[r] = map[int]int{}
	}
	k.served[r][pos]++
	return raw, nil
}

// Served is how often round r's publication went to position pos.
func (k *Kept) Served(r uint32, pos int) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.served[r][pos]
}

// Each calls fn with every publication kept (the tests' count of memory
// held).
func (k *Kept) Each(fn func(raw []byte)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, raw := range k.raw {
		fn(raw)
	}
}

// startFetch marks that this server asks S_0 for round r's publication;
// false if it did already (once a round).
func (k *Kept) startFetch(r uint32) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fetching[r] {
		return false
	}
	if k.fetching == nil {
		k.fetching = map[uint32]bool{}
	}
	k.fetching[r] = true
	return true
}

// watching notes S_0's watch for round r's publication, closed once it
// is over.
func (k *Kept) watching(r uint32, done chan struct{}) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watch == nil {
		k.watch = map[uint32]chan struct{}{}
	}
	k.watch[r] = done
}

// Watch is closed once S_0's watch for round r's publication is over;
// nil if none runs.
func (k *Kept) Watch(r uint32) <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ch := k.watch[r]; ch != nil {
		return ch
	}
	return nil
}
