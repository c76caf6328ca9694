package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
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

func toStoreChunks(chunks []StoredChunk) []store.Chunk {
	out := make([]store.Chunk, len(chunks))
	for i, c := range chunks {
		out[i] = store.Chunk{ID: c.ID, Data: c.Data}
	}
	return out
}

func (b *boltStore) PutRound(epoch [32]byte, round uint32, published [][32]byte, chunks []StoredChunk, index []wire.IndexEntry) error {
	now := time.Now()
	rec := store.RoundRecord{Epoch: epoch, Round: round, Time: now, Published: published}
	idx := make([]store.IndexEntry, len(index))
	for i, e := range index {
		idx[i] = store.IndexEntry{FileID: e.FileID, Name: string(e.Name), Size: e.Size, Chunks: e.Chunks, Epoch: epoch, Round: e.Round, Time: time.Unix(e.Time, 0)}
	}
	// The node computed every id from its data (publish): no second hash.
	return b.st.PutRoundHashed(rec, toStoreChunks(chunks), idx)
}

func (b *boltStore) PutChunks(chunks []StoredChunk) error {
	return b.st.PutChunks(toStoreChunks(chunks))
}

func (b *boltStore) PutRequests(epoch [32]byte, round uint32, list []wire.ListEntry) error {
	reqs := make([]store.Request, len(list))
	for i, le := range list {
		reqs[i] = store.Request{ID: le.ID, Length: le.Len}
	}
	return b.st.PutRequests(epoch, round, reqs)
}

func (b *boltStore) GetChunk(id [32]byte) ([]byte, error) {
	data, err := b.st.GetChunk(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", ErrNoChunk, err)
	}
	return data, err
}

func (b *boltStore) HasChunk(id [32]byte) (bool, error) { return b.st.HasChunk(id) }

func (b *boltStore) Held(ids [][32]byte) ([]wire.ListEntry, error) {
	sids := make([]store.ID, len(ids))
	for i, id := range ids {
		sids[i] = id
	}
	reqs, err := b.st.HeldRequests(sids)
	if err != nil {
		return nil, err
	}
	out := make([]wire.ListEntry, len(reqs))
	for i, r := range reqs {
		out[i] = wire.ListEntry{ID: r.ID, Len: r.Length}
	}
	return out, nil
}

func (b *boltStore) ViewChunks(ids [][32]byte, fn func(rows [][]byte) error) error {
	return b.st.ViewChunks(ids, fn)
}

func (b *boltStore) Index() ([]wire.IndexEntry, error) {
	var out []wire.IndexEntry
	err := b.st.Index(func(e store.IndexEntry) error {
		out = append(out, wire.IndexEntry{FileID: e.FileID, Name: []byte(e.Name), Size: e.Size, Chunks: e.Chunks, Round: e.Round, Time: e.Time.Unix()})
		return nil
	})
	return out, err
}

// Prune drops what retention lets go (§7); the server calls it
// periodically.
func (b *boltStore) Prune(now time.Time) (int, error) { return b.st.Prune(now) }

func (b *boltStore) Close() error { return b.st.Close() }
