package slots

import (
	"context"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// Table holds the peers whose reply is being read and sent (window
// replies, index pages of outsiders), each slot counted in its address
// ranges, and given back with them.
type Table struct {
	mu      sync.Mutex
	n       int
	by      map[peer.ID]int
	inRange map[string]int
	freed   chan struct{} // closed when a slot is given back (TakeWait)
}

// Range is an address range a slot counts in ("": none) and the most
// slots one such range holds at once.
type Range struct {
	Name string
	Max  int
}

// Take takes a slot for from of range rng until release: at most total at
// once, of them perRange of one range, one a peer; else proto.ErrWindowBusy.
func (g *Table) Take(from peer.ID, rng string, total, perRange int) (release func(), err error) {
	release, _, err = g.TryTake(from, rng, total, perRange)
	return release, err
}

// TryTake is Take; when it fails, freed is closed once a slot is given
// back (taken under the same lock, so that no release falls between).
func (g *Table) TryTake(from peer.ID, rng string, total, perRange int) (release func(), freed <-chan struct{}, err error) {
	return g.TryTakeIn(from, total, 1, Range{rng, perRange})
}

// TryTakeIn is TryTake with perPeer slots a peer, counted in each of rs.
func (g *Table) TryTakeIn(from peer.ID, total, perPeer int, rs ...Range) (release func(), freed <-chan struct{}, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	full := g.by[from] >= perPeer || g.n >= total
	for _, r := range rs {
		full = full || (r.Name != "" && g.inRange[r.Name] >= r.Max)
	}
	if full {
		if g.freed == nil {
			g.freed = make(chan struct{})
		}
		return nil, g.freed, proto.ErrWindowBusy
	}
	if g.by == nil {
		g.by, g.inRange = map[peer.ID]int{}, map[string]int{}
	}
	g.n++
	g.by[from]++
	for _, r := range rs {
		if r.Name != "" {
			g.inRange[r.Name]++
		}
	}
	return func() {
		g.mu.Lock()
		g.n--
		if g.by[from]--; g.by[from] <= 0 {
			delete(g.by, from)
		}
		for _, r := range rs {
			if r.Name == "" {
				continue
			}
			if g.inRange[r.Name]--; g.inRange[r.Name] <= 0 {
				delete(g.inRange, r.Name)
			}
		}
		if g.freed != nil {
			close(g.freed)
			g.freed = nil
		}
		g.mu.Unlock()
	}, nil, nil
}

// Held is how many slots of g are held.
func (g *Table) Held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// TakeWait is Take, waiting for a slot given back until ctx ends.
func (g *Table) TakeWait(ctx context.Context, from peer.ID, rng string, total, perRange int) (func(), error) {
	for {
		release, freed, err := g.TryTake(from, rng, total, perRange)
		if err == nil {
			return release, nil
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, err
		}
	}
}

// Enter is Take until ctx ends (the reply written or the stream's
// deadline passed).
func (g *Table) Enter(ctx context.Context, from peer.ID, rng string, total, perRange int) error {
	release, err := g.Take(from, rng, total, perRange)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		release()
	}()
	return nil
}
