package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Chunk bodies live in append-only segment files in a directory beside the
// bbolt file (docs/proto-store.md, "Segments"); bbolt keeps where each
// chunk is. A round's chunks are written once, straight from the caller's
// buffers into the page cache, where bbolt would first copy each into
// pages of its own: measured in BenchmarkStoreRound.
//
// Durability: a write transaction appends its new chunks at the end of
// the newest segment that bbolt has committed, fdatasyncs every segment it
// wrote, and only then puts the chunks' locations and the segments' new
// ends into bbolt and commits. A chunk is therefore acknowledged only once
// its bytes and its location are both on disk. Bytes past a segment's
// committed end (a torn or rolled-back append) are never read, are
// overwritten by the next append and cut off by Open; a segment file that
// bbolt does not know is removed by Open.
//
// Space: deleting a chunk commits its removal first; once no reader that
// might still see it remains, its bytes are punched out of the file
// (Linux; elsewhere they stay until the segment goes) and a segment that
// holds no live chunk and is not the newest is deleted.

// segCap is the size at which a new segment is started, and the length of
// each segment's read-only memory map (address space only). It exceeds
// MaxChunkSize, so any chunk fits in an empty segment.
const segCap = 256 << 20

// segDirSuffix names the segment directory: the bbolt path plus this.
const segDirSuffix = ".seg"

// bucketSegments: u32 segment number → segRecord.
var bucketSegments = []byte("segments")

// chunkLoc is the value of bucketChunks: where a chunk's bytes are.
type chunkLoc struct {
	seg    uint32
	off    uint64
	length uint32
}

// chunkLocSize is u32 segment ‖ u64 offset ‖ u32 length.
const chunkLocSize = 4 + 8 + 4

func (l chunkLoc) encode() []byte {
	b := make([]byte, 0, chunkLocSize)
	b = binary.BigEndian.AppendUint32(b, l.seg)
	b = binary.BigEndian.AppendUint64(b, l.off)
	return binary.BigEndian.AppendUint32(b, l.length)
}

func decodeChunkLoc(b []byte) (chunkLoc, error) {
	if len(b) != chunkLocSize {
		return chunkLoc{}, fmt.Errorf("%w: chunk location of %d bytes, want %d", errCorrupt, len(b), chunkLocSize)
	}
	l := chunkLoc{seg: binary.BigEndian.Uint32(b), off: binary.BigEndian.Uint64(b[4:]), length: binary.BigEndian.Uint32(b[12:])}
	if l.length > MaxChunkSize || l.off+uint64(l.length) > segCap {
		return chunkLoc{}, fmt.Errorf("%w: chunk location %+v out of bounds", errCorrupt, l)
	}
	return l, nil
}

// segRecord is the value of bucketSegments: the committed end of the
// segment's bytes and the bytes of live chunks in it.
type segRecord struct {
	end, live uint64
}

const segRecordSize = 8 + 8

func (r segRecord) encode() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, segRecordSize), r.end), r.live)
}

func decodeSegRecord(b []byte) (segRecord, error) {
	if len(b) != segRecordSize {
		return segRecord{}, fmt.Errorf("%w: segment record of %d bytes, want %d", errCorrupt, len(b), segRecordSize)
	}
	r := segRecord{end: binary.BigEndian.Uint64(b), live: binary.BigEndian.Uint64(b[8:])}
	if r.end > segCap || r.live > r.end {
		return segRecord{}, fmt.Errorf("%w: segment record %+v out of bounds", errCorrupt, r)
	}
	return r, nil
}

func segKey(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func segName(n uint32) string { return fmt.Sprintf("%08x.seg", n) }

// segFile is one open segment.
type segFile struct {
	f *os.File
	m []byte // read-only shared map of segCap bytes; nil where unsupported
}

// reclaim is space freed by a committed deletion, to be given back once
// no reader pinned before it remains.
type reclaim struct {
	gen   uint64
	holes []chunkLoc
	drop  []uint32
}

// segments is a store's set of open segment files.
type segments struct {
	dir string

	mu      sync.Mutex // guards what follows
	idle    *sync.Cond // on mu: signalled when the last reader unpins
	files   map[uint32]*segFile
	gen     uint64         // bumped by every retire
	readers map[uint64]int // pinned readers by the gen they saw
	pending []reclaim
}

// openSegments opens the segment directory of the bbolt file at path and
// reconciles it with the committed records: a tail past a segment's
// committed end is cut off, a file bbolt does not know is removed, a
// segment shorter than its committed end is an error.
func openSegments(db *bolt.DB, path string) (*segments, error) {
	dir := path + segDirSuffix
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create segment directory: %w", err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	sg := &segments{dir: dir, files: map[uint32]*segFile{}, readers: map[uint64]int{}}
	sg.idle = sync.NewCond(&sg.mu)
	known := map[uint32]segRecord{}
	err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSegments).ForEach(func(k, v []byte) error {
			r, err := decodeSegRecord(v)
			if err != nil || len(k) != 4 {
				return fmt.Errorf("segment key %x: %w", k, err)
			}
			known[binary.BigEndian.Uint32(k)] = r
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: read segment records: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: list segments: %w", err)
	}
	removed := false
	for _, e := range entries {
		n, err := strconv.ParseUint(strings.TrimSuffix(e.Name(), ".seg"), 16, 32)
		if _, ok := known[uint32(n)]; err == nil && ok && e.Name() == segName(uint32(n)) {
			continue
		}
		// Written by a transaction that never committed, or not ours.
		if !strings.HasSuffix(e.Name(), ".seg") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return nil, fmt.Errorf("store: remove orphan segment: %w", err)
		}
		removed = true
	}
	if removed {
		if err := syncDir(dir); err != nil {
			return nil, err
		}
	}
	for n, r := range known {
		f, err := os.OpenFile(filepath.Join(dir, segName(n)), os.O_RDWR, 0o600)
		if err != nil {
			sg.close()
			return nil, fmt.Errorf("store: open segment %d: %w", n, err)
		}
		st, err := f.Stat()
		if err == nil && st.Size() < int64(r.end) {
			err = fmt.Errorf("%w: segment %d has %d bytes, %d are committed", errCorrupt, n, st.Size(), r.end)
		}
		if err == nil && st.Size() > int64(r.end) {
			err = f.Truncate(int64(r.end)) // a torn or rolled-back tail
		}
		if err != nil {
			f.Close()
			sg.close()
			return nil, fmt.Errorf("store: segment %d: %w", n, err)
		}
		if err := sg.add(n, f); err != nil {
			sg.close()
			return nil, err
		}
	}
	return sg, nil
}

func syncDir(dir string) error {
	if noSync() {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: open directory to sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return fmt.Errorf("store: sync directory: %w", err)
	}
	return nil
}

func (sg *segments) add(n uint32, f *os.File) error {
	m, err := mapSegment(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("store: map segment %d: %w", n, err)
	}
	sg.mu.Lock()
	sg.files[n] = &segFile{f: f, m: m}
	sg.mu.Unlock()
	return nil
}

// create makes segment n empty and open (an uncommitted file of that
// number from a rolled-back transaction is reused), with its directory
// entry durable before any commit can refer to it.
func (sg *segments) create(n uint32) (*segFile, error) {
	sg.mu.Lock()
	sf := sg.files[n]
	sg.mu.Unlock()
	if sf != nil {
		return sf, nil // bytes past its (zero) committed end are overwritten
	}
	f, err := os.OpenFile(filepath.Join(sg.dir, segName(n)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: create segment %d: %w", n, err)
	}
	if err := syncDir(sg.dir); err != nil {
		f.Close()
		return nil, err
	}
	if err := sg.add(n, f); err != nil {
		return nil, err
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	return sg.files[n], nil
}

func (sg *segments) file(n uint32) (*segFile, error) {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	sf := sg.files[n]
	if sf == nil {
		return nil, fmt.Errorf("%w: segment %d is not open", errCorrupt, n)
	}
	return sf, nil
}

// read returns a chunk's bytes: a slice of the segment's map (read-only,
// valid while the caller stays pinned), or a copy where there is no map.
func (sg *segments) read(l chunkLoc) ([]byte, error) {
	sf, err := sg.file(l.seg)
	if err != nil {
		return nil, err
	}
	end := l.off + uint64(l.length)
	if sf.m != nil {
		return sf.m[l.off:end:end], nil
	}
	b := make([]byte, l.length)
	if _, err := sf.f.ReadAt(b, int64(l.off)); err != nil {
		return nil, fmt.Errorf("store: read segment %d at %d: %w", l.seg, l.off, err)
	}
	return b, nil
}

// pin registers a reader before it opens its bbolt snapshot: space freed
// by deletions committed from then on is not given back until unpin.
func (sg *segments) pin() uint64 {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	sg.readers[sg.gen]++
	return sg.gen
}

func (sg *segments) unpin(g uint64) {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if sg.readers[g]--; sg.readers[g] == 0 {
		delete(sg.readers, g)
	}
	if len(sg.readers) == 0 {
		sg.idle.Broadcast()
	}
	sg.reclaimLocked()
}

// retire queues the space of a committed deletion.
func (sg *segments) retire(holes []chunkLoc, drop []uint32) {
	if len(holes) == 0 && len(drop) == 0 {
		return
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	sg.gen++
	sg.pending = append(sg.pending, reclaim{gen: sg.gen, holes: holes, drop: drop})
	sg.reclaimLocked()
}

// reclaimLocked gives back the space of every pending deletion that no
// pinned reader predates. Failures only leave bytes on disk.
func (sg *segments) reclaimLocked() {
	// A reader pinned at g may hold a snapshot from before any deletion
	// tagged above g.
	oldest := ^uint64(0)
	for g := range sg.readers {
		oldest = min(oldest, g)
	}
	keep := sg.pending[:0]
	for _, r := range sg.pending {
		if r.gen > oldest {
			keep = append(keep, r)
			continue
		}
		for _, n := range r.drop {
			if sf := sg.files[n]; sf != nil {
				sf.close()
				delete(sg.files, n)
				os.Remove(filepath.Join(sg.dir, segName(n)))
			}
		}
		for _, h := range r.holes {
			if sf := sg.files[h.seg]; sf != nil && h.length > 0 {
				punchHole(sf.f, int64(h.off), int64(h.length))
			}
		}
	}
	clear(sg.pending[len(keep):])
	sg.pending = keep
}

func (sf *segFile) close() {
	if sf.m != nil {
		unmapSegment(sf.m)
		sf.m = nil
	}
	sf.f.Close()
}

// close waits for every pinned reader (a ViewChunks callback may still be
// reading a map), then unmaps and closes every segment.
func (sg *segments) close() {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	for len(sg.readers) > 0 {
		sg.idle.Wait()
	}
	sg.reclaimLocked()
	for n, sf := range sg.files {
		sf.close()
		delete(sg.files, n)
	}
}

// segWriter appends one write transaction's chunks.
type segWriter struct {
	sg      *segments
	bucket  *bolt.Bucket
	recs    map[uint32]segRecord // segments changed by this transaction
	dirty   []uint32             // segments written, to sync
	active  uint32
	started bool
}

func (sg *segments) writer(tx *bolt.Tx) *segWriter {
	return &segWriter{sg: sg, bucket: tx.Bucket(bucketSegments), recs: map[uint32]segRecord{}}
}

func (sw *segWriter) record(n uint32) (segRecord, error) {
	if r, ok := sw.recs[n]; ok {
		return r, nil
	}
	v := sw.bucket.Get(segKey(n))
	if v == nil {
		return segRecord{}, fmt.Errorf("%w: segment %d has no record", errCorrupt, n)
	}
	return decodeSegRecord(v)
}

// append writes data at the committed end of the newest segment (a new
// one if it would pass segCap) and returns where. Nothing is durable or
// visible until finish and the commit.
func (sw *segWriter) append(data []byte) (chunkLoc, error) {
	if !sw.started {
		if k, _ := sw.bucket.Cursor().Last(); k != nil {
			if len(k) != 4 {
				return chunkLoc{}, fmt.Errorf("%w: segment key %x", errCorrupt, k)
			}
			sw.active = binary.BigEndian.Uint32(k)
		} else if err := sw.start(0); err != nil {
			return chunkLoc{}, err
		}
		sw.started = true
	}
	r, err := sw.record(sw.active)
	if err != nil {
		return chunkLoc{}, err
	}
	if r.end+uint64(len(data)) > segCap {
		if err := sw.start(sw.active + 1); err != nil {
			return chunkLoc{}, err
		}
		r = sw.recs[sw.active]
	}
	sf, err := sw.sg.create(sw.active)
	if err != nil {
		return chunkLoc{}, err
	}
	if _, err := sf.f.WriteAt(data, int64(r.end)); err != nil {
		return chunkLoc{}, fmt.Errorf("store: append %d bytes to segment %d: %w", len(data), sw.active, err)
	}
	if !slices.Contains(sw.dirty, sw.active) {
		sw.dirty = append(sw.dirty, sw.active)
	}
	l := chunkLoc{seg: sw.active, off: r.end, length: uint32(len(data))}
	r.end += uint64(len(data))
	r.live += uint64(len(data))
	sw.recs[sw.active] = r
	return l, nil
}

func (sw *segWriter) start(n uint32) error {
	if n == 0 && sw.started {
		return fmt.Errorf("store: segment numbers exhausted")
	}
	if _, err := sw.sg.create(n); err != nil {
		return err
	}
	sw.active = n
	sw.recs[n] = segRecord{}
	return nil
}

// free removes a deleted chunk's bytes from its segment's live count.
func (sw *segWriter) free(l chunkLoc) error {
	r, err := sw.record(l.seg)
	if err != nil {
		return err
	}
	if r.live < uint64(l.length) {
		return fmt.Errorf("%w: segment %d has %d live bytes, freeing %d", errCorrupt, l.seg, r.live, l.length)
	}
	r.live -= uint64(l.length)
	sw.recs[l.seg] = r
	return nil
}

// finish makes the appended bytes durable, then records the segments'
// new state in the transaction. It returns the segments left with no live
// chunk, other than the newest, whose records it deleted: their files go
// once the transaction commits and no reader needs them.
func (sw *segWriter) finish() (drop []uint32, err error) {
	for _, n := range sw.dirty {
		sf, err := sw.sg.file(n)
		if err != nil {
			return nil, err
		}
		if noSync() {
			continue // tests that ask only (nosync_riffletest.go)
		}
		if err := syncData(sf.f); err != nil {
			return nil, fmt.Errorf("store: sync segment %d: %w", n, err)
		}
	}
	last := uint32(0)
	if k, _ := sw.bucket.Cursor().Last(); k != nil {
		last = binary.BigEndian.Uint32(k)
	}
	for n := range sw.recs {
		last = max(last, n)
	}
	for n, r := range sw.recs {
		if r.live == 0 && n != last {
			if err := sw.bucket.Delete(segKey(n)); err != nil {
				return nil, err
			}
			drop = append(drop, n)
			continue
		}
		if err := sw.bucket.Put(segKey(n), r.encode()); err != nil {
			return nil, err
		}
	}
	return drop, nil
}
