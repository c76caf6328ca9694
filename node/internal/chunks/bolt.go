package chunks

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/riffle-net/riffle/store"
)

// ServerDBName is the server database's file name inside the data
// directory.
const ServerDBName = "server.db"

// OpenStore opens the bbolt server store (§7) in dir.
func OpenStore(dir string, opts store.Options, log *slog.Logger) (*BoltStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("node: data directory %s: %w", dir, err)
	}
	if opts.Logger == nil {
		opts.Logger = log
	}
	st, err := store.Open(filepath.Join(dir, ServerDBName), opts)
	if err != nil {
		return nil, fmt.Errorf("node: open server store: %w", err)
	}
	return &BoltStore{st: st}, nil
}

// BoltStore adapts the store package to Store.
type BoltStore struct{ st *store.Store }

var _ Store = (*BoltStore)(nil)

// DB is the bbolt store under the adapter: its usage for the snapshot,
// its round records for the tests.
func (b *BoltStore) DB() *store.Store { return b.st }

func (b *BoltStore) PutRound(epoch [32]byte, round uint32, published [][32]byte, chunks []store.Chunk, index []store.IndexEntry) error {
	rec := store.RoundRecord{Epoch: epoch, Round: round, Time: time.Now(), Published: published}
	// The node computed every id from its data (publish): no second hash.
	return b.st.PutRoundHashed(rec, chunks, index)
}

func (b *BoltStore) PutChunks(chunks []store.Chunk) error { return b.st.PutChunks(chunks) }

func (b *BoltStore) PutRequests(epoch [32]byte, round uint32, list []store.Request) error {
	return b.st.PutRequests(epoch, round, list)
}

func (b *BoltStore) GetChunk(id [32]byte) ([]byte, error) {
	data, err := b.st.GetChunk(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", ErrNoChunk, err)
	}
	return data, err
}

func (b *BoltStore) HasChunk(id [32]byte) (bool, error) { return b.st.HasChunk(id) }

func (b *BoltStore) Held(ids [][32]byte) ([]store.Request, error) { return b.st.HeldRequests(ids) }

func (b *BoltStore) ViewChunks(ids [][32]byte, fn func(rows [][]byte) error) error {
	return b.st.ViewChunks(ids, fn)
}

func (b *BoltStore) Index() ([]store.IndexEntry, error) {
	var out []store.IndexEntry
	err := b.st.Index(func(e store.IndexEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

func (b *BoltStore) PutManifests(mans []store.Manifest, index []store.IndexEntry) error {
	return b.st.PutManifests(mans, index)
}

func (b *BoltStore) Manifests() ([][]byte, error) {
	var out [][]byte
	err := b.st.Manifests(func(m store.Manifest) error {
		out = append(out, m.Data)
		return nil
	})
	return out, err
}

func (b *BoltStore) IndexSince(cursor uint64, budget int) (store.IndexChanges, error) {
	return b.st.IndexSince(cursor, budget)
}

// Prune drops what retention lets go (§7); the server calls it
// periodically.
func (b *BoltStore) Prune(now time.Time) (int, error) { return b.st.Prune(now) }

func (b *BoltStore) Close() error { return b.st.Close() }
