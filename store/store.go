// Package store is riffle's persistent storage on bbolt (SPEC §7).
//
// A server's Store keeps the chunks published in rounds (by id), the public
// index of files (file id → name, size, chunk count, first publication),
// per round the ids published and the request list (SPEC §5.3), and the
// epoch records (SPEC §3), under a disk quota and a retention period. A
// client's ClientDB keeps the user's shares and downloads, with the
// verified chunks of a download in progress, so that an interrupted
// download resumes.
//
// Every write is one bbolt transaction and returns only after the commit
// is on disk: a chunk is acknowledged only once stored (SPEC §5.3). Values
// returned by the API are copies, except in ViewChunks and
// ClientDB.ViewHeld, which hand out slices of the memory map for zero-copy
// PIR and live only as long as their callback.
//
// Layout (docs/proto-store.md, measured in docs/bench/store.md): each chunk is a nested
// bucket holding one value, so that a chunk's 256 KiB (up to 4 MiB) lives
// in its own run of overflow pages and putting or deleting a chunk never
// rewrites a neighbour's bytes, as bbolt does for large values that share a
// leaf. Pages are 4 KiB and the freelist is a hash map kept on disk.
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

// Mmap sizing: bbolt must wait for every open read transaction before it
// can grow its memory map, and PIR holds one for a whole pass over the
// round's rows. Mapping the whole expected database up front means a
// commit never waits for PIR. Address space is cheap; the file itself
// grows only as data is written.
const (
	defaultMmapSize = 1 << 30  // when no quota is set
	maxMmapSize     = 64 << 30 // ceiling for very large quotas
	minMmapSize     = 64 << 20
)

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

// Chunk bytes live in nested buckets: parent[id] is a bucket whose single
// key chunkDataKey holds the bytes. See the package comment for why.
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
