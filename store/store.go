// Package store is riffle's persistent storage (§7;
// docs/proto-store.md).
//
// A server's Store keeps the chunks published in rounds (by id), the public
// index of files (file id → name, size, chunk count, first publication),
// per round the ids published and the request list (§5.3), and the
// epoch records (§3), under a disk quota and a retention period. A
// client's ClientDB keeps the user's shares and downloads, with the
// verified chunks of a download in progress, so that an interrupted
// download resumes.
//
// Every write is one bbolt transaction and returns only after the commit
// is on disk: a chunk is acknowledged only once stored (§5.3). Values
// returned by the API are copies, except in ViewChunks and
// ClientDB.ViewHeld, which hand out slices of a read-only memory map for
// zero-copy PIR and live only as long as their callback.
//
// Layout (measured, see docs/proto-store.md and docs/bench/store.md): the
// server keeps chunk bodies in append-only segment files beside its bbolt
// file, which holds their locations and every record (segment.go): a
// round's chunks are written once, from the caller's buffers. The client
// keeps chunk bytes inside bbolt, each chunk a nested bucket holding one
// value, so that a chunk lives in its own run of overflow pages and
// putting or deleting one never rewrites a neighbour's bytes. Pages are
// 4 KiB and the freelist is a hash map kept on disk.
//
// Files: store.go (options shared by both stores), server.go (Store: open,
// writes), read.go (its reads), epochs.go (epoch records), prune.go
// (retention), indexlog.go (the index log), segment.go (segment files),
// records.go and codec.go (record types and their encoding), client.go
// (ClientDB).
package store

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Sentinel errors, for errors.Is.
var (
	// ErrQuota: a put would take the store past its quota. Nothing of the
	// put was written.
	ErrQuota = errors.New("store: quota exceeded")
	// ErrNotFound: no such chunk, record or download.
	ErrNotFound = errors.New("store: not found")
	// ErrLocked: another process (or another Open in this one) holds the
	// database.
	ErrLocked = errors.New("store: database locked")
	// ErrBadChunk: a chunk's bytes do not hash to its id, or it is too big.
	ErrBadChunk = errors.New("store: bad chunk")
	// ErrConflict: a record exists with different contents (a round put
	// twice with different lists, a second different onion for a round).
	ErrConflict = errors.New("store: conflicting record")
)

// lockTimeout is how long Open waits for bbolt's flock before giving up:
// well under the one second promised to the operator, and several of
// bbolt's 50 ms retries.
const lockTimeout = 500 * time.Millisecond

// pageSize is bbolt's page size. 4 KiB gave the least space overhead for
// 256 KiB chunks (1.1 % against 2.7 % at 16 KiB and 9 % at 64 KiB) at the
// same write speed, in TestLayoutMeasure.
const pageSize = 4096

// serverMmapSize is the server database's initial map. It holds only
// small records (chunk bodies are in segment files), and no reader holds
// a transaction while it uses chunk bytes, so a commit that must grow the
// map waits for short lookups only.
const serverMmapSize = 64 << 20

// lockedError is what Open returns for a database locked elsewhere.
type lockedError struct{ path string }

func (e *lockedError) Error() string {
	return fmt.Sprintf("store: database %s is locked by another process", e.path)
}

func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// openBolt opens (creating if needed) a bbolt file with the package's
// options, failing with a *lockedError within lockTimeout if it is locked.
func openBolt(path string, mmapSize int) (*bolt.DB, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: create directory of %s: %w", path, err)
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         lockTimeout,
		PageSize:        pageSize,
		FreelistType:    bolt.FreelistMapType,
		NoFreelistSync:  false, // same write speed, reopen ~50× faster
		InitialMmapSize: mmapSize,
		NoSync:          noSync(), // false but in tests that ask (nosync_riffletest.go)
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, &lockedError{path: path}
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return db, nil
}

func discardLogger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// present is the value of set-like buckets (age indexes, needed ids): a
// non-empty value, because bbolt's Get does not tell an empty value from a
// missing key in every case.
var present = []byte{1}

// In the client file, chunk bytes live in nested buckets: parent[id] is a
// bucket whose single key chunkDataKey holds the bytes. See the package
// comment for why.
var chunkDataKey = []byte{'d'}

// getChunkTx returns a chunk's bytes from the nested layout and whether it
// is there (a chunk may be empty). The slice belongs to the transaction.
func getChunkTx(parent *bolt.Bucket, id ID) ([]byte, bool) {
	b := parent.Bucket(id[:])
	if b == nil {
		return nil, false
	}
	v := b.Get(chunkDataKey)
	return v, v != nil || b.Stats().KeyN == 1
}

// putChunkTx stores a chunk in the nested layout; the caller has checked
// that it is absent.
func putChunkTx(parent *bolt.Bucket, id ID, data []byte) error {
	b, err := parent.CreateBucket(id[:])
	if err != nil {
		return fmt.Errorf("store: create chunk %x: %w", id[:8], err)
	}
	// A chunk bucket never gets a second key: fill it to the brim.
	b.FillPercent = 1
	if err := b.Put(chunkDataKey, data); err != nil {
		return fmt.Errorf("store: put chunk %x (%d bytes): %w", id[:8], len(data), err)
	}
	return nil
}

// viewChunks calls fn with the bytes of chunks ids of a nested-layout
// bucket, in order, as slices of the transaction's memory map.
func viewChunks(parent *bolt.Bucket, ids []ID, fn func(rows [][]byte) error) error {
	rows := make([][]byte, len(ids))
	for i, id := range ids {
		v, ok := getChunkTx(parent, id)
		if !ok {
			return fmt.Errorf("%w: chunk %x (row %d of %d)", ErrNotFound, id[:8], i, len(ids))
		}
		rows[i] = v[:len(v):len(v)]
	}
	return fn(rows)
}
