package chunks

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/riffle-net/riffle/store"
)

// Store is what a server keeps (§7). The bbolt store implements it
// through an adapter (BoltStore); MemStore is the in-memory version for tests.
type Store interface {
	// PutRound stores a round's chunks, index entries and published ids in
	// one transaction; the round is acknowledged only after it returns.
	PutRound(epoch [32]byte, round uint32, published [][32]byte, chunks []store.Chunk, index []store.IndexEntry) error
	PutChunks(chunks []store.Chunk) error
	PutRequests(epoch [32]byte, round uint32, list []store.Request) error
	GetChunk(id [32]byte) ([]byte, error)
	HasChunk(id [32]byte) (bool, error)
	// Held returns, in the order of ids, the id and length of each chunk
	// held, skipping the others (no chunk is read).
	Held(ids [][32]byte) ([]store.Request, error)
	// ViewChunks runs fn with the chunks of ids (zero-copy where the store
	// allows: the slices die when fn returns).
	ViewChunks(ids [][32]byte, fn func(rows [][]byte) error) error
	Index() ([]store.IndexEntry, error)
	// PutManifests indexes manifest chunks, already stored, with the
	// entries of the roots among them (§6.4 v3); the first publication of
	// an id wins.
	PutManifests(mans []store.Manifest, index []store.IndexEntry) error
	// Manifests returns the bytes of every indexed manifest chunk.
	Manifests() ([][]byte, error)
	// IndexSince returns the index changes logged after cursor, up to
	// budget bytes as the wire counts them (store.Store.IndexSince).
	IndexSince(cursor uint64, budget int) (store.IndexChanges, error)
	// PutPairs keeps the (output position, requested id) pairs of a
	// round's final request list (§7 v3).
	PutPairs(epoch [32]byte, round uint32, ps []store.Pair) error
	// PutClosing keeps an epoch's closing record, checked, and logs it
	// in the index log (§7 v3); Closing returns it (store.ErrNotFound).
	PutClosing(epoch [32]byte, rec []byte) error
	Closing(epoch [32]byte) ([]byte, error)
	// PutWindowItem keeps what a client needs to check an epoch this
	// server served in (§6.3 v3); WindowItem returns it (store.ErrNotFound).
	PutWindowItem(number uint64, epoch [32]byte, item []byte) error
	WindowItem(number uint64, epoch [32]byte) ([]byte, error)
	// PutList keeps a round's final request list as signed; List returns
	// it (store.ErrNotFound): what a server out of the epoch's chain
	// checks against the closing record (catchup.go).
	PutList(epoch [32]byte, round uint32, list []byte) error
	List(epoch [32]byte, round uint32) ([]byte, error)
	// CatchupCursor and PutCatchupCursor keep, per peer, the number of
	// the last index change read there by the catch-up (catchup.go).
	CatchupCursor(peer []byte) (uint64, error)
	PutCatchupCursor(peer []byte, n uint64) error
	Close() error
}

// ErrNoChunk is returned for a chunk the store does not hold.
var ErrNoChunk = errors.New("node: no such chunk")

type MemStore struct {
	mu     sync.RWMutex
	chunks map[[32]byte][]byte
	index  map[[32]byte]store.IndexEntry
	mans   map[[32]byte][]byte
	lists  map[[36]byte][]store.Request
	// log is the index log (store index-log): log[i] is change i+1;
	// logged maps an id to its live add record's number.
	log    []memChange
	logged map[[32]byte]uint64
	// pairs and closings: chunkstore_demand.go.
	pairs    map[[36]byte][]store.Pair
	closings map[[32]byte][]byte
	window   map[[32]byte][]byte
	// finals and cursors: chunkstore_demand.go.
	finals  map[[36]byte][]byte
	cursors map[string]uint64
}

// memChange is one change of the index log: an id added or removed.
type memChange struct {
	id      [32]byte
	removed bool
	dead    bool // replaced by a later record of the same id
	closing bool // id is an epoch whose closing record was kept
}

// logIndex appends a change of id; call with m.mu held.
func (m *MemStore) logIndex(id [32]byte, removed bool) {
	if m.logged == nil {
		m.logged = map[[32]byte]uint64{}
	}
	if n, ok := m.logged[id]; ok {
		m.log[n-1].dead = true
		delete(m.logged, id)
	}
	m.log = append(m.log, memChange{id: id, removed: removed})
	if !removed {
		m.logged[id] = uint64(len(m.log))
	}
}

func (m *MemStore) IndexSince(cursor uint64, budget int) (store.IndexChanges, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	last := uint64(len(m.log))
	out := store.IndexChanges{Next: cursor}
	if cursor >= last {
		out.Next = last
		return out, nil
	}
	used := 0
	for n := cursor + 1; n <= last; n++ {
		c := m.log[n-1]
		if c.dead {
			continue
		}
		size := 32
		e, hasE := m.index[c.id]
		b, hasM := m.mans[c.id]
		if c.closing {
			size = 4 + len(m.closings[c.id])
			hasE, hasM = false, false
		} else if !c.removed {
			size = 0
			if hasE {
				size += store.IndexEntryWireSize(&e)
			}
			if hasM {
				size += 4 + len(b)
			}
		}
		if used > 0 && used+size > budget {
			out.More = true
			return out, nil
		}
		used += size
		out.Next = n
		switch {
		case c.closing:
			out.Closings = append(out.Closings, m.closings[c.id])
		case c.removed:
			out.Removed = append(out.Removed, c.id)
		default:
			if hasE {
				out.Entries = append(out.Entries, e)
			}
			if hasM {
				out.Manifests = append(out.Manifests, store.Manifest{ID: c.id, Data: b})
			}
		}
	}
	return out, nil
}

// NewMemStore returns an in-memory Store (tests, the demo).
func NewMemStore() Store {
	return &MemStore{chunks: map[[32]byte][]byte{}, index: map[[32]byte]store.IndexEntry{}, mans: map[[32]byte][]byte{}, lists: map[[36]byte][]store.Request{}}
}

func (m *MemStore) PutRound(epoch [32]byte, round uint32, published [][32]byte, chunks []store.Chunk, index []store.IndexEntry) error {
	if err := m.PutChunks(chunks); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range index {
		if _, ok := m.index[e.FileID]; !ok {
			m.index[e.FileID] = e
			m.logIndex(e.FileID, false)
		}
	}
	return nil
}

func (m *MemStore) PutChunks(chunks []store.Chunk) error {
	for _, c := range chunks {
		if sha256.Sum256(c.Data) != c.ID {
			return fmt.Errorf("node: chunk %x does not hash to its id", c.ID[:6])
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range chunks {
		if _, ok := m.chunks[c.ID]; !ok {
			m.chunks[c.ID] = append([]byte(nil), c.Data...)
		}
	}
	return nil
}

func (m *MemStore) PutRequests(epoch [32]byte, round uint32, list []store.Request) error {
	var k [36]byte
	copy(k[:], epoch[:])
	k[32], k[33], k[34], k[35] = byte(round>>24), byte(round>>16), byte(round>>8), byte(round)
	m.mu.Lock()
	m.lists[k] = append([]store.Request(nil), list...)
	m.mu.Unlock()
	return nil
}

func (m *MemStore) GetChunk(id [32]byte) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.chunks[id]
	if !ok {
		return nil, ErrNoChunk
	}
	return append([]byte(nil), c...), nil
}

func (m *MemStore) Held(ids [][32]byte) ([]store.Request, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []store.Request
	for _, id := range ids {
		if c, ok := m.chunks[id]; ok {
			out = append(out, store.Request{ID: id, Length: uint32(len(c))})
		}
	}
	return out, nil
}

func (m *MemStore) HasChunk(id [32]byte) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.chunks[id]
	return ok, nil
}

func (m *MemStore) ViewChunks(ids [][32]byte, fn func(rows [][]byte) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	rows := make([][]byte, len(ids))
	for i, id := range ids {
		c, ok := m.chunks[id]
		if !ok {
			return fmt.Errorf("%w: %x", ErrNoChunk, id[:6])
		}
		rows[i] = c
	}
	return fn(rows)
}

func (m *MemStore) Index() ([]store.IndexEntry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]store.IndexEntry, 0, len(m.index))
	for _, e := range m.index {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

func (m *MemStore) PutManifests(mans []store.Manifest, index []store.IndexEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range mans {
		if sha256.Sum256(x.Data) != x.ID {
			return fmt.Errorf("node: manifest %x does not hash to its id", x.ID[:6])
		}
		if _, ok := m.chunks[x.ID]; !ok {
			return fmt.Errorf("%w: manifest %x", ErrNoChunk, x.ID[:6])
		}
		if _, ok := m.mans[x.ID]; !ok {
			m.mans[x.ID] = append([]byte(nil), x.Data...)
			m.logIndex(x.ID, false)
		}
	}
	for _, e := range index {
		if _, ok := m.index[e.FileID]; !ok {
			m.index[e.FileID] = e
			m.logIndex(e.FileID, false)
		}
	}
	return nil
}

func (m *MemStore) Manifests() ([][]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([][]byte, 0, len(m.mans))
	for _, b := range m.mans {
		out = append(out, b)
	}
	return out, nil
}

func (m *MemStore) Close() error { return nil }
