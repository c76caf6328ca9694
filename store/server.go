package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// Server bucket names. Keys and values are described in
// docs/proto-store.md.
var (
	bucketChunks     = []byte("chunks")      // id → chunkLoc (bytes in a segment file)
	bucketChunkMeta  = []byte("chunk-meta")  // id → chunkMeta
	bucketChunkAge   = []byte("chunk-age")   // u64 touched ns ‖ id → present
	bucketIndex      = []byte("index")       // file id → IndexEntry
	bucketManifests  = []byte("manifests")   // chunk id → Manifest (§6.4 v3)
	bucketIndexLog   = []byte("index-log")   // u64 sequence → u8 op ‖ id (the index's changes, in order)
	bucketIndexSeq   = []byte("index-seq")   // id → u64 sequence of its live add record
	bucketIndexAge   = []byte("index-age")   // u64 indexed ns ‖ manifest id → present
	bucketIndexGone  = []byte("index-gone")  // u64 removed ns ‖ u64 sequence of the remove record → present
	bucketClosingAge = []byte("closing-age") // u64 kept ns ‖ u64 sequence of the closing's log record → epoch id
	bucketRounds     = []byte("rounds")      // epoch id ‖ u32 round → RoundRecord
	bucketRoundAge   = []byte("round-age")   // u64 time ns ‖ epoch id ‖ u32 round → present
	bucketEpochs     = []byte("epochs")      // u64 number ‖ epoch id → EpochRecord
	bucketEpochIDs   = []byte("epoch-ids")   // epoch id → u64 number
	bucketMeta       = []byte("meta")        // metaSchema, metaUsage
)

var serverBuckets = [][]byte{bucketChunks, bucketChunkMeta, bucketChunkAge, bucketIndex, bucketManifests, bucketIndexLog, bucketIndexSeq,
	bucketIndexAge, bucketIndexGone, bucketClosingAge,
	bucketRounds, bucketRoundAge, bucketEpochs, bucketEpochIDs, bucketMeta, bucketSegments, bucketPairs, bucketClosing,
	bucketLists, bucketCatchup}

var (
	metaSchema = []byte("schema") // u32 serverSchema
	metaUsage  = []byte("usage")  // u64 bytes of chunk data stored
)

// serverSchema is the version of the server layout; Open refuses others.
// Version 1 kept chunk bodies inside bbolt (nested buckets); version 2
// keeps them in segment files.
const serverSchema = 2

// Options are a server store's operator settings.
type Options struct {
	// QuotaBytes caps the bytes of chunk data stored (0: no cap). The file
	// is about 2 % larger than the data, plus bbolt's 16 MiB growth step
	// (docs/proto-store.md).
	QuotaBytes int64
	// Retention is how long a chunk is kept after it was last published,
	// fetched or listed in a request list, and a round or epoch record
	// after its time (0: forever).
	Retention time.Duration
	// IndexRetention is how long a manifest stays in the public index,
	// with its index entry, after it was indexed (0: for good). It is a
	// group constant (§7 v3) that the node passes on, so that every
	// server holds the same index; the chunk bodies' Retention, an
	// operator's setting, does not touch the index.
	IndexRetention time.Duration
	// Logger receives debug and info events; nil is quiet.
	Logger *slog.Logger
}

// Store is a server's database. Its methods are safe for concurrent use.
type Store struct {
	db   *bolt.DB
	segs *segments
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	usage   int64 // mirror of metaUsage as of write transaction usageTx
	usageTx int

	// clock, if set, replaces time.Now for the times that start an index
	// retention (tests).
	clock func() time.Time
}

func (s *Store) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// setUsage records the usage committed by write transaction txid. Commits
// are serialised but their callers return in any order: the newest wins.
func (s *Store) setUsage(txid int, usage int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if txid >= s.usageTx {
		s.usageTx, s.usage = txid, usage
	}
}

// Open opens or creates the server database at path. If another process
// holds it, Open fails within a second with an error matching ErrLocked.
func Open(path string, opts Options) (*Store, error) {
	if opts.QuotaBytes < 0 || opts.Retention < 0 || opts.IndexRetention < 0 {
		return nil, fmt.Errorf("store: negative quota %d or retention %v, %v", opts.QuotaBytes, opts.Retention, opts.IndexRetention)
	}
	db, err := openBolt(path, serverMmapSize)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, opts: opts, log: discardLogger(opts.Logger)}
	var usage int64
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range serverBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("store: create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(metaSchema); len(v) == 4 && binary.BigEndian.Uint32(v) == 1 {
			return fmt.Errorf("store: %s has schema 1 (chunk bodies inside bbolt), this build reads schema %d (chunk bodies in segment files, docs/proto-store.md); move the file aside and let the node fetch its chunks again", path, serverSchema)
		} else if v == nil {
			if err := meta.Put(metaSchema, binary.BigEndian.AppendUint32(nil, serverSchema)); err != nil {
				return err
			}
		} else if len(v) != 4 || binary.BigEndian.Uint32(v) != serverSchema {
			return fmt.Errorf("store: %s has schema %x, this build reads %d", path, v, serverSchema)
		}
		if err := backfillIndexLog(tx); err != nil {
			return err
		}
		if err := backfillClosingAge(tx, time.Now()); err != nil {
			return err
		}
		var err error
		usage, err = readUsage(meta)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	if s.segs, err = openSegments(db, path); err != nil {
		db.Close()
		return nil, err
	}
	s.setUsage(0, usage)
	s.log.Debug("store opened", "path", path, "usage", usage, "quota", opts.QuotaBytes, "retention", opts.Retention)
	return s, nil
}

// Close closes the database; it waits for open transactions and for
// ViewChunks callbacks to return.
func (s *Store) Close() error {
	err := s.db.Close()
	s.segs.close()
	if err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Usage returns the bytes of chunk data stored, as counted against the
// quota.
func (s *Store) Usage() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

func readUsage(meta *bolt.Bucket) (int64, error) {
	v := meta.Get(metaUsage)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < 0 {
		return 0, fmt.Errorf("%w: usage counter of %d bytes", errCorrupt, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func writeUsage(meta *bolt.Bucket, usage int64) error {
	return meta.Put(metaUsage, binary.BigEndian.AppendUint64(nil, uint64(usage)))
}

// checkChunk verifies a chunk's size and that its bytes hash to its id.
func checkChunk(c Chunk) error {
	if len(c.Data) > MaxChunkSize {
		return fmt.Errorf("%w: %x has %d bytes > %d", ErrBadChunk, c.ID[:8], len(c.Data), MaxChunkSize)
	}
	if sha256.Sum256(c.Data) != c.ID {
		return fmt.Errorf("%w: %d bytes do not hash to id %x", ErrBadChunk, len(c.Data), c.ID[:8])
	}
	return nil
}

// writer holds the buckets of one write transaction and the quota state.
type writer struct {
	s                          *Store
	chunks, meta, age, metaBkt *bolt.Bucket
	segs                       *segWriter
	usage                      int64
	now                        time.Time
	drop                       []uint32 // empty segments, set by finish
}

func (s *Store) newWriter(tx *bolt.Tx, now time.Time) (*writer, error) {
	w := &writer{s: s, now: now,
		chunks: tx.Bucket(bucketChunks), meta: tx.Bucket(bucketChunkMeta),
		age: tx.Bucket(bucketChunkAge), metaBkt: tx.Bucket(bucketMeta),
		segs: s.segs.writer(tx)}
	var err error
	w.usage, err = readUsage(w.metaBkt)
	return w, err
}

func ageKey(t time.Time, id []byte) []byte {
	k := make([]byte, 0, 8+len(id))
	k = binary.BigEndian.AppendUint64(k, uint64(timeNanos(t)))
	return append(k, id...)
}

// touch records that chunk id (of the given length) was put or used now,
// moving it in the retention order. It never touches the chunk's bytes.
func (w *writer) touch(id ID, length uint32) error {
	if v := w.meta.Get(id[:]); v != nil {
		m, err := decodeChunkMeta(v)
		if err != nil {
			return fmt.Errorf("chunk %x: %w", id[:8], err)
		}
		if !w.now.After(m.touched) {
			return nil
		}
		if err := w.age.Delete(ageKey(m.touched, id[:])); err != nil {
			return err
		}
	}
	if err := w.meta.Put(id[:], chunkMeta{touched: w.now, length: length}.encode()); err != nil {
		return err
	}
	return w.age.Put(ageKey(w.now, id[:]), present)
}

// put stores a verified chunk unless present (then only touches it), and
// charges new bytes against the quota.
func (w *writer) put(c Chunk) error {
	if w.chunks.Get(c.ID[:]) == nil {
		if q := w.s.opts.QuotaBytes; q > 0 && w.usage+int64(len(c.Data)) > q {
			return fmt.Errorf("%w: chunk %x of %d bytes on top of %d stored passes the quota of %d bytes",
				ErrQuota, c.ID[:8], len(c.Data), w.usage, q)
		}
		loc, err := w.segs.append(c.Data)
		if err != nil {
			return err
		}
		if err := w.chunks.Put(c.ID[:], loc.encode()); err != nil {
			return fmt.Errorf("store: put chunk %x: %w", c.ID[:8], err)
		}
		w.usage += int64(len(c.Data))
	}
	return w.touch(c.ID, uint32(len(c.Data)))
}

// finish makes the transaction's segment bytes durable and records the
// segments and the usage; the caller then commits.
func (w *writer) finish() error {
	drop, err := w.segs.finish()
	if err != nil {
		return err
	}
	w.drop = drop
	return writeUsage(w.metaBkt, w.usage)
}

// PutChunks stores chunks (for instance fetched from other servers), in one
// transaction: all or none. A chunk already stored is not stored or
// charged again; its retention clock restarts.
func (s *Store) PutChunks(chunks []Chunk) error {
	for _, c := range chunks {
		if err := checkChunk(c); err != nil {
			return err
		}
	}
	var (
		usage int64
		txid  int
	)
	err := s.db.Update(func(tx *bolt.Tx) error {
		w, err := s.newWriter(tx, time.Now())
		if err != nil {
			return err
		}
		for _, c := range chunks {
			if err := w.put(c); err != nil {
				return err
			}
		}
		usage, txid = w.usage, tx.ID()
		return w.finish()
	})
	if err != nil {
		return fmt.Errorf("store: put %d chunks: %w", len(chunks), err)
	}
	s.setUsage(txid, usage)
	return nil
}

func roundKey(epoch EpochID, round uint32) []byte {
	return binary.BigEndian.AppendUint32(append(make([]byte, 0, 36), epoch[:]...), round)
}

// PutRound commits a round in one transaction (§5.3): the chunks
// published in it, the index entries of the root manifests among them (the
// node builds them), and the round record. Every published id must be
// among chunks or already stored, every index entry's file id too, and
// every request's chunk must be stored with the listed length (it is a row
// of the round's PIR database). Putting the same round again is a no-op;
// putting it again with a different record fails with ErrConflict. An
// index entry for a file already indexed keeps the first publication.
func (s *Store) PutRound(rec RoundRecord, chunks []Chunk, index []IndexEntry) error {
	for _, c := range chunks {
		if err := checkChunk(c); err != nil {
			return fmt.Errorf("store: round %d: %w", rec.Round, err)
		}
	}
	return s.PutRoundHashed(rec, chunks, index)
}

// PutRoundHashed is PutRound for a caller that has just computed every
// chunk's ID as the SHA-256 of its Data (the node, which hashes each
// published payload to find its id): the store does not hash the round
// again. Sizes are still checked.
func (s *Store) PutRoundHashed(rec RoundRecord, chunks []Chunk, index []IndexEntry) error {
	if err := rec.validate(); err != nil {
		return err
	}
	for _, c := range chunks {
		if len(c.Data) > MaxChunkSize {
			return fmt.Errorf("store: round %d: %w: %x has %d bytes > %d", rec.Round, ErrBadChunk, c.ID[:8], len(c.Data), MaxChunkSize)
		}
	}
	// Names come from uploaders' manifests: a bad one must not make the
	// whole round fail (that would let any client void rounds), so it is
	// cleaned rather than refused.
	index = append([]IndexEntry(nil), index...)
	for i := range index {
		index[i].Name = cleanName(index[i].Name)
	}
	value := rec.encode()
	var (
		usage int64
		txid  int
	)
	err := s.db.Update(func(tx *bolt.Tx) error {
		now := rec.Time // validated non-zero
		w, err := s.newWriter(tx, now)
		if err != nil {
			return err
		}
		rounds := tx.Bucket(bucketRounds)
		key := roundKey(rec.Epoch, rec.Round)
		if old := rounds.Get(key); old != nil {
			if !bytes.Equal(old, value) {
				return fmt.Errorf("%w: round %d of epoch %x is stored with other contents", ErrConflict, rec.Round, rec.Epoch[:8])
			}
		}
		for _, c := range chunks {
			if err := w.put(c); err != nil {
				return err
			}
		}
		for _, id := range rec.Published {
			if w.chunks.Get(id[:]) == nil {
				return fmt.Errorf("%w: published chunk %x is neither given nor stored", ErrNotFound, id[:8])
			}
		}
		if err := w.putRequests(rec.Requests); err != nil {
			return err
		}
		idx := tx.Bucket(bucketIndex)
		for i := range index {
			e := &index[i]
			if w.chunks.Get(e.FileID[:]) == nil {
				return fmt.Errorf("%w: index entry's root manifest %x is neither given nor stored", ErrNotFound, e.FileID[:8])
			}
			if idx.Get(e.FileID[:]) != nil {
				continue // first publication wins
			}
			if err := idx.Put(e.FileID[:], e.encode()); err != nil {
				return err
			}
			if err := logIndex(tx, indexAdd, e.FileID); err != nil {
				return err
			}
			if err := tx.Bucket(bucketIndexAge).Put(ageKey(now, e.FileID[:]), present); err != nil {
				return err
			}
		}
		if err := rounds.Put(key, value); err != nil {
			return err
		}
		if err := tx.Bucket(bucketRoundAge).Put(ageKey(now, key), present); err != nil {
			return err
		}
		usage, txid = w.usage, tx.ID()
		return w.finish()
	})
	if err != nil {
		return fmt.Errorf("store: put round %d of epoch %x: %w", rec.Round, rec.Epoch[:8], err)
	}
	s.setUsage(txid, usage)
	s.log.Debug("round stored", "epoch", fmt.Sprintf("%x", rec.Epoch[:6]), "round", rec.Round,
		"chunks", len(chunks), "published", len(rec.Published), "requests", len(rec.Requests), "index", len(index))
	return nil
}

// PutManifests indexes manifest chunks in one transaction (§6.4 v3):
// the bytes of each, and the index entries of the roots among them. Every
// chunk must be stored already (its round was put) and hash to its id; an
// id or file id already indexed keeps its first publication. The node
// chooses what is indexed: chunks that parse as manifests, within the caps
// per pseudonym and per epoch.
func (s *Store) PutManifests(mans []Manifest, index []IndexEntry) error {
	for _, m := range mans {
		if len(m.Data) > MaxChunkSize {
			return fmt.Errorf("store: manifest %x: %w: %d bytes > %d", m.ID[:8], ErrBadChunk, len(m.Data), MaxChunkSize)
		}
		if sha256.Sum256(m.Data) != m.ID {
			return fmt.Errorf("store: manifest %x: %w: bytes do not hash to the id", m.ID[:8], ErrBadChunk)
		}
	}
	index = append([]IndexEntry(nil), index...)
	for i := range index {
		index[i].Name = cleanName(index[i].Name)
	}
	now := s.now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		chunks, mb, idx := tx.Bucket(bucketChunks), tx.Bucket(bucketManifests), tx.Bucket(bucketIndex)
		for i := range mans {
			m := &mans[i]
			if chunks.Get(m.ID[:]) == nil {
				return fmt.Errorf("%w: manifest %x is not stored", ErrNotFound, m.ID[:8])
			}
			if mb.Get(m.ID[:]) != nil {
				continue // first publication wins
			}
			if err := mb.Put(m.ID[:], m.encode()); err != nil {
				return err
			}
			if err := logIndex(tx, indexAdd, m.ID); err != nil {
				return err
			}
			if err := tx.Bucket(bucketIndexAge).Put(ageKey(now, m.ID[:]), present); err != nil {
				return err
			}
		}
		for i := range index {
			e := &index[i]
			if chunks.Get(e.FileID[:]) == nil {
				return fmt.Errorf("%w: index entry's root manifest %x is not stored", ErrNotFound, e.FileID[:8])
			}
			if idx.Get(e.FileID[:]) != nil {
				continue
			}
			if err := idx.Put(e.FileID[:], e.encode()); err != nil {
				return err
			}
			if err := logIndex(tx, indexAdd, e.FileID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: put manifests: %w", err)
	}
	return nil
}

// Manifests calls fn for every indexed manifest chunk, in id order, inside
// one read transaction. An error from fn stops the walk and is returned.
func (s *Store) Manifests(fn func(Manifest) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketManifests).ForEach(func(k, v []byte) error {
			if len(k) != 32 {
				return fmt.Errorf("%w: manifest key of %d bytes", errCorrupt, len(k))
			}
			m, err := decodeManifest(ID(k), v)
			if err != nil {
				return err
			}
			return fn(m)
		})
	})
}

// cleanName makes an uploader's file name fit the index: invalid UTF-8
// becomes U+FFFD and the name is cut, on a character boundary, to
// MaxNameBytes.
func cleanName(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if len(name) <= MaxNameBytes {
		return name
	}
	cut := MaxNameBytes
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut]
}

// putRequests checks that every requested chunk is stored with the listed
// length and restarts its retention clock: a chunk in the current PIR
// database must not be pruned under it.
func (w *writer) putRequests(reqs []Request) error {
	for i, q := range reqs {
		v := w.meta.Get(q.ID[:])
		if v == nil {
			return fmt.Errorf("%w: request %d: chunk %x is not stored", ErrNotFound, i, q.ID[:8])
		}
		m, err := decodeChunkMeta(v)
		if err != nil {
			return err
		}
		if m.length != q.Length {
			return fmt.Errorf("store: request %d: chunk %x has %d bytes, list says %d", i, q.ID[:8], m.length, q.Length)
		}
		if err := w.touch(q.ID, m.length); err != nil {
			return err
		}
	}
	return nil
}

// PutRequests sets the request list of a stored round whose record was put
// without one (the list is agreed after publication, §5.3). Setting
// the same list again is a no-op; a different non-empty list is
// ErrConflict.
func (s *Store) PutRequests(epoch EpochID, round uint32, reqs []Request) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		rounds := tx.Bucket(bucketRounds)
		key := roundKey(epoch, round)
		v := rounds.Get(key)
		if v == nil {
			return ErrNotFound
		}
		rec, err := decodeRoundRecord(v)
		if err != nil {
			return err
		}
		if len(rec.Requests) > 0 {
			if !equalRequests(rec.Requests, reqs) {
				return fmt.Errorf("%w: a different request list of %d entries is stored", ErrConflict, len(rec.Requests))
			}
			return nil
		}
		rec.Requests = reqs
		if err := rec.validate(); err != nil {
			return err
		}
		w, err := s.newWriter(tx, time.Now())
		if err != nil {
			return err
		}
		if err := w.putRequests(reqs); err != nil {
			return err
		}
		return rounds.Put(key, rec.encode())
	})
	if err != nil {
		return fmt.Errorf("store: put %d requests of round %d of epoch %x: %w", len(reqs), round, epoch[:8], err)
	}
	return nil
}

func equalRequests(a, b []Request) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
