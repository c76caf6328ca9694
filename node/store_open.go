package node

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

// StoreOptions are the operator's storage settings (§7): quota and
// retention, passed to the bbolt store.
type StoreOptions = store.Options

// openStore opens the bbolt server store (§7) in dir.
func openStore(dir string, opts store.Options, log *slog.Logger) (*boltStore, error) {
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
	return &boltStore{st: st}, nil
}

// boltStore adapts the store package to ChunkStore.
type boltStore struct{ st *store.Store }

var _ ChunkStore = (*boltStore)(nil)

func (b *boltStore) PutRound(epoch [32]byte, round uint32, published [][32]byte, chunks []store.Chunk, index []IndexEntry) error {
	rec := store.RoundRecord{Epoch: epoch, Round: round, Time: time.Now(), Published: published}
	// The node computed every id from its data (publish): no second hash.
	return b.st.PutRoundHashed(rec, chunks, index)
}

func (b *boltStore) PutChunks(chunks []store.Chunk) error { return b.st.PutChunks(chunks) }

func (b *boltStore) PutRequests(epoch [32]byte, round uint32, list []store.Request) error {
	return b.st.PutRequests(epoch, round, list)
}

func (b *boltStore) GetChunk(id [32]byte) ([]byte, error) {
	data, err := b.st.GetChunk(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", ErrNoChunk, err)
	}
	return data, err
}

func (b *boltStore) HasChunk(id [32]byte) (bool, error) { return b.st.HasChunk(id) }

func (b *boltStore) Held(ids [][32]byte) ([]store.Request, error) { return b.st.HeldRequests(ids) }

func (b *boltStore) ViewChunks(ids [][32]byte, fn func(rows [][]byte) error) error {
	return b.st.ViewChunks(ids, fn)
}

func (b *boltStore) Index() ([]IndexEntry, error) {
	var out []IndexEntry
	err := b.st.Index(func(e IndexEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

func (b *boltStore) PutManifests(mans []store.Manifest, index []IndexEntry) error {
	return b.st.PutManifests(mans, index)
}

func (b *boltStore) Manifests() ([][]byte, error) {
	var out [][]byte
	err := b.st.Manifests(func(m store.Manifest) error {
		out = append(out, m.Data)
		return nil
	})
	return out, err
}

func (b *boltStore) IndexSince(cursor uint64, budget int) (store.IndexChanges, error) {
	return b.st.IndexSince(cursor, budget)
}

// Prune drops what retention lets go (§7); the server calls it
// periodically.
func (b *boltStore) Prune(now time.Time) (int, error) { return b.st.Prune(now) }

func (b *boltStore) Close() error { return b.st.Close() }
