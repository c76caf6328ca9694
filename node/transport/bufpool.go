package transport

import (
	"math/bits"
	"sync"

	"github.com/riffle-net/riffle/internal/wire"
)

// BufPool recycles the large buffers of a round: frame bodies of the
// batches a server receives and the padded PIR answers it sends. A fresh
// buffer of tens of megabytes costs the kernel's page faults and the
// runtime's zeroing at every use (measured: a copy into a fresh 64 MiB
// buffer runs at a tenth of the speed of a copy into a reused one), and a
// round moves hundreds of megabytes through each server.
//
// Buffers come in size classes from PoolMin up, sixteen per doubling (so a
// buffer wastes at most 1/16 of its size: onions just over 2^k bytes are
// kept by the thousand); the pool keeps at most poolMax bytes of free
// buffers (less once an epoch runs: poolRounds of its rounds' databases,
// setLimit) and lets the garbage collector have the rest. A buffer is put back only by the code that owns it and knows
// that nothing refers to it any longer; a buffer never put back is simply
// collected. Reused buffers are not zeroed: every user overwrites the
// bytes it reads (frame bodies are read in full, answers are computed in
// full).
type BufPool struct {
	mu    sync.Mutex
	free  map[int][][]byte // by class: the capacity
	bytes int              // capacity of all free buffers
	limit int              // cap on bytes (0: poolMax)
}

const (
	PoolMin = 64 << 10 // smaller buffers are cheap to allocate
	// poolMax caps the free bytes kept: a round at n = 200, b = 256 KiB
	// cycles about 200 MB through the pool.
	poolMax = 512 << 20
	// poolRounds is the free bytes kept in rounds' databases (n·b) of the
	// newest epoch: what a round gives back before the next takes it
	// (measured: TestServerMemoryPerRound).
	poolRounds = 2
)

// setLimit caps the free bytes at poolRounds databases of n·b bytes
// (within [PoolMin, poolMax]) and drops free buffers beyond it.
func (p *BufPool) SetLimit(n, b int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit = min(max(poolRounds*n*b, PoolMin), poolMax)
	for c, l := range p.free {
		for len(l) > 0 && p.bytes > p.limit {
			l[len(l)-1] = nil
			l = l[:len(l)-1]
			p.bytes -= c
		}
		p.free[c] = l
	}
}

// poolClass is the capacity of the class of n ≥ PoolMin: n rounded up to a
// multiple of 1/16 of the largest power of two not above n.
func poolClass(n int) int {
	step := (1 << (bits.Len(uint(n)) - 1)) / 16
	return (n + step - 1) / step * step
}

// get returns a buffer of length n: recycled if the pool has one of its
// class, else new (with the class's capacity, so that it can be put back).
func (p *BufPool) Get(n int) []byte {
	if n < PoolMin {
		return make([]byte, n)
	}
	c := poolClass(n)
	p.mu.Lock()
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		p.bytes -= cap(b)
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n, c)
}

// put gives a buffer from get back; the caller must hold no reference to
// it (nor to any slice of it) afterwards.
func (p *BufPool) Put(b []byte) {
	c := cap(b)
	if c < PoolMin || poolClass(c) != c {
		return // not one of get's
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	limit := p.limit
	if limit == 0 {
		limit = poolMax
	}
	if p.bytes+c > limit {
		return
	}
	if p.free == nil {
		p.free = map[int][][]byte{}
	}
	p.free[c] = append(p.free[c], b[:0])
	p.bytes += c
}

// buffers is the pool as frame bodies' buffers: a body is read into
// recycled pieces as its bytes arrive (wire.BodyStart), then into one
// buffer of its length, the pieces given back, so that a header alone
// takes nothing big from the pool.
func (p *BufPool) Buffers() *wire.Buffers {
	return &wire.Buffers{Get: p.Get, Put: p.Put}
}

// Free is the capacity of the free buffers kept (tests: what a round's
// end gives back, what the pool holds at rest).
func (p *BufPool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}
