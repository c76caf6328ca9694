// Package layerbufs is an epoch's buffers for opening its layer of a
// round's onions (mix.OpenLayerSkipInto, docs/protocol.md §5.2): one slab
// of n onions, reused round after round while it fits, so that a server
// does not allocate a round's worth of onions every round, and dropped
// when the epoch ends. Bufs has its own leaf lock (the mixing runs
// outside the server's); package node's mixing.go takes and puts them.
package layerbufs

import "sync"

// Bufs are one epoch's layer buffers.
type Bufs struct {
	mu   sync.Mutex
	bufs [][]byte
	// dropped: the epoch ended, its buffers are not kept.
	dropped bool
}

// Take returns n buffers of size bytes, reused from earlier rounds of the
// epoch when they fit.
func (b *Bufs) Take(n, size int) [][]byte {
	b.mu.Lock()
	bufs := b.bufs
	b.bufs = nil
	b.mu.Unlock()
	if len(bufs) != n || (n > 0 && cap(bufs[0]) < size) {
		slab := make([]byte, n*size)
		bufs = make([][]byte, n)
		for p := range bufs {
			bufs[p] = slab[p*size : (p+1)*size : (p+1)*size]
		}
	}
	for p := range bufs {
		bufs[p] = bufs[p][:size]
	}
	return bufs
}

// Put hands buffers back after the batch made from them is sent; they
// are not kept once the epoch's are dropped.
func (b *Bufs) Put(bufs [][]byte) {
	b.mu.Lock()
	if !b.dropped {
		b.bufs = bufs
	}
	b.mu.Unlock()
}

// Drop lets the buffers go at the epoch's end, and any put after.
func (b *Bufs) Drop() {
	b.mu.Lock()
	b.bufs, b.dropped = nil, true
	b.mu.Unlock()
}

// Held returns the buffers kept now (for the memory tests).
func (b *Bufs) Held() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bufs
}
