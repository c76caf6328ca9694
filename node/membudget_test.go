package node

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/riffle-net/riffle/chunker"
)

// bulkHeld is what a server holds of a round's bulk bytes, by where it is
// held; each backing array is counted once, by its capacity, in the first
// place it is found (in this order).
type bulkHeld struct {
	Rounds   int // frames, onions, masks, padded and combined answers of the rounds, handed-over onions
	Inputs   int // input batches held for a blame walk, evidence of void rounds
	Layers   int // the mixing's layer buffers
	PoolFree int // the pool's free buffers
}

func (h bulkHeld) total() int { return h.Rounds + h.Inputs + h.Layers + h.PoolFree }

// spans counts distinct memory: a slice is its backing array from its
// first byte to its capacity, and overlapping spans count once.
type spans struct{ s [][2]uintptr }

func (sp *spans) add(b []byte) {
	if cap(b) == 0 {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b[:1])))
	sp.s = append(sp.s, [2]uintptr{p, p + uintptr(cap(b))})
}

func (sp *spans) addAll(bs [][]byte) {
	for _, b := range bs {
		sp.add(b)
	}
}

// bytes is the size of the union of the spans added since the last call,
// less what earlier calls already counted (seen).
func (sp *spans) bytes(seen *[][2]uintptr) int {
	all := append(append([][2]uintptr(nil), *seen...), sp.s...)
	before := union(*seen)
	*seen = all
	sp.s = nil
	return union(all) - before
}

func union(s [][2]uintptr) int {
	s = append([][2]uintptr(nil), s...)
	sort.Slice(s, func(i, j int) bool { return s[i][0] < s[j][0] })
	n := 0
	var end uintptr
	for _, x := range s {
		if x[1] <= end {
			continue
		}
		if x[0] < end {
			x[0] = end
		}
		n += int(x[1] - x[0])
		end = x[1]
	}
	return n
}

// bulkHeld walks s's epochs and pool. Buffers in flight (a batch being
// mixed, padded answers being sent) are not in the state and not counted.
func (s *Server) bulkHeld() bulkHeld {
	var h bulkHeld
	var seen [][2]uintptr
	var sp spans
	s.mu.Lock()
	epochs := make([]*sepoch, 0, len(s.epochs))
	for _, e := range s.epochs {
		epochs = append(epochs, e)
	}
	for _, e := range epochs {
		for _, x := range e.rounds {
			sp.addAll(x.bodies)
			sp.add(x.kept)
			for _, n := range x.notes {
				sp.add(n.body)
			}
			for _, sub := range x.subs {
				sp.add(sub.Onion)
			}
		}
		e.pir.Each(sp.addAll)
		e.pubs.Each(sp.add)
	}
	for _, e := range epochs {
		for _, subs := range e.handover.Held {
			for _, sub := range subs {
				sp.add(sub.Onion)
			}
		}
	}
	h.Rounds = sp.bytes(&seen)
	for _, e := range epochs {
		for _, in := range e.held {
			sp.addAll(in.bufs)
			sp.addAll(in.entries)
		}
		for _, ev := range e.evidence {
			sp.addAll(ev)
		}
	}
	h.Inputs = sp.bytes(&seen)
	s.mu.Unlock()
	for _, e := range epochs {
		sp.addAll(e.layers.Held())
	}
	h.Layers = sp.bytes(&seen)
	h.PoolFree = s.pool.Free()
	return h
}

// memRounds bounds a server's bulk bytes in rounds' databases (n·b): the
// onions of the rounds kept (roundsKept behind the newest list and W +
// mixDepth ahead; S_0 holds every slot's, a primary its own clients'),
// their answers, one set of layer buffers and the pool's poolRounds.
const memRounds = 18

// TestServerMemoryPerRound: over two epochs of a crowd that shares and
// fetches, no server holds more bulk bytes (round state, held inputs,
// layer buffers and the pool's free buffers) than memRounds rounds'
// databases n·b, sampled every 5 ms of virtual time.
func TestServerMemoryPerRound(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const m, n, chunks = 3, 12, 4
		p := testParams(2*chunks + 16)
		p.ChunkSize, p.K, p.MaxRows = 64<<10, 1, n
		db := n * int(p.ChunkSize)
		tn := startAnonNet(t, m, n, n, p, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		peak := make([]bulkHeld, m)
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				for i, s := range tn.servers {
					if h := s.bulkHeld(); h.total() > peak[i].total() {
						peak[i] = h
					}
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		links := make([]chunker.Link, n)
		var wg sync.WaitGroup
		for i, c := range tn.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := c.Share(ctx, bytes.NewReader(anonRand(t, chunks*int(p.ChunkSize))), fmt.Sprintf("f%d", i), false)
				if err != nil {
					t.Error(err)
				}
				links[i] = l
			}()
		}
		wg.Wait()
		for i, c := range tn.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Get(ctx, links[(i+1)%n], t.TempDir()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		close(stop)
		<-sampled
		for i, h := range peak {
			t.Logf("server %d: peak %.1f × n·b (rounds %.1f, inputs %.1f, layers %.1f, pool %.1f)", i,
				float64(h.total())/float64(db), float64(h.Rounds)/float64(db), float64(h.Inputs)/float64(db), float64(h.Layers)/float64(db), float64(h.PoolFree)/float64(db))
			if h.total() > memRounds*db {
				t.Errorf("server %d held %d bytes, more than %d rounds' databases of %d", i, h.total(), memRounds, db)
			}
		}
	})
}
