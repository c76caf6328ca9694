package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Client bucket names. Keys and values are described in
// docs/proto-store.md.
var (
	bucketShares    = []byte("shares")    // file id → Share
	bucketDownloads = []byte("downloads") // file id → Download
	bucketNeed      = []byte("dl-need")   // file id → bucket {chunk id → present}
	bucketHave      = []byte("dl-have")   // file id → bucket {chunk id → bucket {"d": bytes}}
	bucketOnions    = []byte("onions")    // epoch id ‖ u32 round → bucket {"d": onion}
	bucketClient    = []byte("meta")      // metaSchema
	// The synced copy of the public index (§7 v3) and, per server
	// synced from, the cursor of its index log reached.
	bucketSyncEntries = []byte("sync-index")     // file id → IndexEntry
	bucketSyncMans    = []byte("sync-manifests") // chunk id → manifest bytes
	bucketSyncCursors = []byte("sync-cursors")   // server peer id → u64 cursor
	bucketSyncSeen    = []byte("sync-seen")      // id → u64 ns first held
)

var clientBuckets = [][]byte{bucketShares, bucketDownloads, bucketNeed, bucketHave, bucketOnions, bucketClient,
	bucketSyncEntries, bucketSyncMans, bucketSyncCursors, bucketSyncSeen, bucketResume}

// clientSchema is the version of the client layout; OpenClient refuses
// others.
const clientSchema = 1

// clientMmapSize maps the client database ahead, since ViewHeld holds a
// read transaction while a download is assembled; a client holds one or a
// few downloads in progress.
const clientMmapSize = 256 << 20

// MaxOnionSize bounds a stored onion: §5.1's P + 16·m is a chunk of
// up to MaxChunkSize plus a header, 32·k request ids, a signature and one
// MAC tag per server, all far below the 1 MiB of slack allowed here.
const MaxOnionSize = MaxChunkSize + 1<<20

// ErrNotNeeded: MarkChunk got a chunk that the download does not need.
var ErrNotNeeded = errors.New("store: chunk not needed by this download")

// ShareState is where a share stands.
type ShareState uint8

// Share states.
const (
	ShareQueued    ShareState = 1 // chunked, waiting for upload rounds
	ShareUploading ShareState = 2 // some chunks published
	SharePublished ShareState = 3 // every chunk published
	ShareFailed    ShareState = 4 // given up; see the node's log
)

// Share is a file the user shares: its link, the local path it was read
// from, and upload progress.
type Share struct {
	FileID      ID
	Link        string // may carry a decryption key in its fragment (§6.4)
	Path        string
	State       ShareState
	ChunksTotal uint32 // data and manifest chunks to publish
	ChunksSent  uint32
	Created     time.Time
	Updated     time.Time
}

// Download is a file the user fetches. The chunks it needs (the root
// manifest first, then what manifests list) and those verified so far are
// kept in the database with their bytes until CompleteDownload.
type Download struct {
	FileID    ID
	Link      string // may carry a decryption key in its fragment (§6.4)
	Output    string // where the file goes
	Needed    uint32 // distinct chunk ids needed
	Held      uint32 // distinct chunk ids verified and held
	Bytes     uint64 // bytes of chunk data held in the database
	Completed bool
	Created   time.Time
	Updated   time.Time
}

// ClientOptions are a client database's settings.
type ClientOptions struct {
	Logger *slog.Logger // nil is quiet
}

// ClientDB is a client's database of shares, downloads and sealed onions.
// Its methods are safe for concurrent use. The file is created 0600: links
// of private shares carry their key.
type ClientDB struct {
	db  *bolt.DB
	log *slog.Logger
}

// OpenClient opens or creates the client database at path. If another
// process holds it, it fails within a second with an error matching
// ErrLocked.
func OpenClient(path string, opts ClientOptions) (*ClientDB, error) {
	db, err := openBolt(path, clientMmapSize)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range clientBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("store: create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketClient)
		if v := meta.Get(metaSchema); v == nil {
			return meta.Put(metaSchema, binary.BigEndian.AppendUint32(nil, clientSchema))
		} else if len(v) != 4 || binary.BigEndian.Uint32(v) != clientSchema {
			return fmt.Errorf("store: %s has client schema %x, this build reads %d", path, v, clientSchema)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &ClientDB{db: db, log: discardLogger(opts.Logger)}, nil
}

// Close closes the database.
func (c *ClientDB) Close() error {
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("store: close client db: %w", err)
	}
	return nil
}

func (s *Share) validate() error {
	if err := validText("share link", s.Link, MaxTextBytes); err != nil {
		return err
	}
	return validText("share path", s.Path, MaxTextBytes)
}

// encode: version ‖ file id ‖ link ‖ path ‖ u8 state ‖ u32 total ‖
// u32 sent ‖ u64 created ‖ u64 updated.
func (s *Share) encode() []byte {
	w := enc{wire.Enc{B: make([]byte, 0, 1+32+8+len(s.Link)+len(s.Path)+1+8+16)}}
	w.U8(recordVersion)
	w.id(s.FileID)
	w.str(s.Link)
	w.str(s.Path)
	w.U8(uint8(s.State))
	w.U32(s.ChunksTotal)
	w.U32(s.ChunksSent)
	w.time(s.Created)
	w.time(s.Updated)
	return w.B
}

func decodeShare(b []byte) (Share, error) {
	d := dec{Dec: wire.Dec{B: b}, what: "share"}
	var s Share
	d.version()
	s.FileID = d.id("file id")
	s.Link = d.str("link", MaxTextBytes)
	s.Path = d.str("path", MaxTextBytes)
	s.State = ShareState(d.U8("state"))
	s.ChunksTotal = d.U32("chunks total")
	s.ChunksSent = d.U32("chunks sent")
	s.Created = d.time("created")
	s.Updated = d.time("updated")
	return s, d.finish()
}

func (dl *Download) validate() error {
	if err := validText("download link", dl.Link, MaxTextBytes); err != nil {
		return err
	}
	return validText("download output", dl.Output, MaxTextBytes)
}

// encode: version ‖ file id ‖ link ‖ output ‖ u32 needed ‖ u32 held ‖
// u64 bytes ‖ u8 completed ‖ u64 created ‖ u64 updated.
func (dl *Download) encode() []byte {
	w := enc{wire.Enc{B: make([]byte, 0, 1+32+8+len(dl.Link)+len(dl.Output)+16+1+16)}}
	w.U8(recordVersion)
	w.id(dl.FileID)
	w.str(dl.Link)
	w.str(dl.Output)
	w.U32(dl.Needed)
	w.U32(dl.Held)
	w.U64(dl.Bytes)
	done := uint8(0)
	if dl.Completed {
		done = 1
	}
	w.U8(done)
	w.time(dl.Created)
	w.time(dl.Updated)
	return w.B
}

func decodeDownload(b []byte) (Download, error) {
	d := dec{Dec: wire.Dec{B: b}, what: "download"}
	var dl Download
	d.version()
	dl.FileID = d.id("file id")
	dl.Link = d.str("link", MaxTextBytes)
	dl.Output = d.str("output", MaxTextBytes)
	dl.Needed = d.U32("needed")
	dl.Held = d.U32("held")
	dl.Bytes = d.U64("bytes")
	switch done := d.U8("completed"); {
	case d.Err != nil:
	case done > 1:
		d.fail("completed flag %d", done)
	default:
		dl.Completed = done == 1
	}
	dl.Created = d.time("created")
	dl.Updated = d.time("updated")
	return dl, d.finish()
}

// PutShare stores or replaces a share record.
func (c *ClientDB) PutShare(s Share) error {
	if err := s.validate(); err != nil {
		return err
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketShares).Put(s.FileID[:], s.encode())
	})
	if err != nil {
		return fmt.Errorf("store: put share %x: %w", s.FileID[:8], err)
	}
	return nil
}

// UpdateShare reads, modifies with fn and writes back a share in one
// transaction; fn must not change FileID. An error from fn aborts.
func (c *ClientDB) UpdateShare(fileID ID, fn func(*Share) error) error {
	err := c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketShares)
		v := b.Get(fileID[:])
		if v == nil {
			return ErrNotFound
		}
		s, err := decodeShare(v)
		if err != nil {
			return err
		}
		if err := fn(&s); err != nil {
			return err
		}
		if s.FileID != fileID {
			return fmt.Errorf("store: share update changed file id to %x", s.FileID[:8])
		}
		if err := s.validate(); err != nil {
			return err
		}
		return b.Put(fileID[:], s.encode())
	})
	if err != nil {
		return fmt.Errorf("store: update share %x: %w", fileID[:8], err)
	}
	return nil
}

// Share returns a share record, or ErrNotFound.
func (c *ClientDB) Share(fileID ID) (Share, error) {
	var s Share
	err := c.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketShares).Get(fileID[:])
		if v == nil {
			return fmt.Errorf("%w: share %x", ErrNotFound, fileID[:8])
		}
		var err error
		s, err = decodeShare(v)
		return err
	})
	return s, err
}

// Shares calls fn for every share, in file id order.
func (c *ClientDB) Shares(fn func(Share) error) error {
	return c.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketShares).ForEach(func(_, v []byte) error {
			s, err := decodeShare(v)
			if err != nil {
				return err
			}
			return fn(s)
		})
	})
}

// RemoveShare deletes a share record (absent is not an error).
func (c *ClientDB) RemoveShare(fileID ID) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketShares).Delete(fileID[:])
	})
}

// dlTx gathers one download's record and buckets inside a transaction.
type dlTx struct {
	rec        Download
	downloads  *bolt.Bucket
	need, have *bolt.Bucket // nil once completed
}

func openDownload(tx *bolt.Tx, fileID ID) (*dlTx, error) {
	d := &dlTx{downloads: tx.Bucket(bucketDownloads)}
	v := d.downloads.Get(fileID[:])
	if v == nil {
		return nil, fmt.Errorf("%w: download %x", ErrNotFound, fileID[:8])
	}
	var err error
	if d.rec, err = decodeDownload(v); err != nil {
		return nil, err
	}
	d.need = tx.Bucket(bucketNeed).Bucket(fileID[:])
	d.have = tx.Bucket(bucketHave).Bucket(fileID[:])
	if !d.rec.Completed && (d.need == nil || d.have == nil) {
		return nil, fmt.Errorf("%w: download %x in progress lacks its chunk buckets", errCorrupt, fileID[:8])
	}
	return d, nil
}

func (d *dlTx) save() error {
	d.rec.Updated = time.Now()
	return d.downloads.Put(d.rec.FileID[:], d.rec.encode())
}

// StartDownload records a new download of fileID, needing its root
// manifest, or returns the existing record (resumed = true) so that an
// interrupted download carries on with what it holds.
func (c *ClientDB) StartDownload(fileID ID, link, output string) (dl Download, resumed bool, err error) {
	now := time.Now()
	dl = Download{FileID: fileID, Link: link, Output: output, Needed: 1, Created: now, Updated: now}
	if err := dl.validate(); err != nil {
		return Download{}, false, err
	}
	err = c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDownloads)
		if v := b.Get(fileID[:]); v != nil {
			var err error
			dl, err = decodeDownload(v)
			resumed = true
			return err
		}
		need, err := tx.Bucket(bucketNeed).CreateBucket(fileID[:])
		if err != nil {
			return err
		}
		if err := need.Put(fileID[:], present); err != nil {
			return err
		}
		if _, err := tx.Bucket(bucketHave).CreateBucket(fileID[:]); err != nil {
			return err
		}
		return b.Put(fileID[:], dl.encode())
	})
	if err != nil {
		return Download{}, false, fmt.Errorf("store: start download %x: %w", fileID[:8], err)
	}
	if resumed {
		c.log.Debug("download resumed", "file", fmt.Sprintf("%x", fileID[:8]), "held", dl.Held, "needed", dl.Needed)
	}
	return dl, resumed, nil
}

// Need adds chunk ids that a download needs (those its manifests list);
// ids already needed are ignored. It returns the updated record.
func (c *ClientDB) Need(fileID ID, ids []ID) (Download, error) {
	var rec Download
	err := c.db.Update(func(tx *bolt.Tx) error {
		d, err := openDownload(tx, fileID)
		if err != nil {
			return err
		}
		if d.rec.Completed {
			return fmt.Errorf("%w: download is complete", ErrConflict)
		}
		for _, id := range ids {
			if d.need.Get(id[:]) != nil {
				continue
			}
			if err := d.need.Put(id[:], present); err != nil {
				return err
			}
			d.rec.Needed++
		}
		rec = d.rec
		return d.save()
	})
	if err != nil {
		return Download{}, fmt.Errorf("store: add %d needed chunks to download %x: %w", len(ids), fileID[:8], err)
	}
	return rec, nil
}

// MarkChunk stores a chunk of a download, verified here against its id
// (SHA-256), and returns the updated record. The chunk must be needed
// (ErrNotNeeded otherwise); one already held is a no-op.
func (c *ClientDB) MarkChunk(fileID ID, data []byte) (Download, error) {
	id := ID(sha256.Sum256(data))
	if len(data) > MaxChunkSize {
		return Download{}, fmt.Errorf("%w: %d bytes > %d", ErrBadChunk, len(data), MaxChunkSize)
	}
	var rec Download
	err := c.db.Update(func(tx *bolt.Tx) error {
		d, err := openDownload(tx, fileID)
		if err != nil {
			return err
		}
		rec = d.rec
		if d.rec.Completed {
			return nil
		}
		if d.need.Get(id[:]) == nil {
			return fmt.Errorf("%w: %x", ErrNotNeeded, id[:8])
		}
		if _, ok := getChunkTx(d.have, id); ok {
			return nil
		}
		if err := putChunkTx(d.have, id, data); err != nil {
			return err
		}
		d.rec.Held++
		d.rec.Bytes += uint64(len(data))
		rec = d.rec
		return d.save()
	})
	if err != nil {
		return Download{}, fmt.Errorf("store: mark chunk %x of download %x: %w", id[:8], fileID[:8], err)
	}
	return rec, nil
}

// Missing returns the ids a download needs and does not hold, in id order.
func (c *ClientDB) Missing(fileID ID) ([]ID, error) {
	var out []ID
	err := c.db.View(func(tx *bolt.Tx) error {
		d, err := openDownload(tx, fileID)
		if err != nil || d.rec.Completed {
			return err
		}
		return d.need.ForEach(func(k, _ []byte) error {
			if len(k) != 32 {
				return fmt.Errorf("%w: needed id of %d bytes", errCorrupt, len(k))
			}
			if _, ok := getChunkTx(d.have, ID(k)); !ok {
				out = append(out, ID(k))
			}
			return nil
		})
	})
	return out, err
}

// HeldChunk returns a copy of a held chunk of a download, or ErrNotFound.
func (c *ClientDB) HeldChunk(fileID, id ID) ([]byte, error) {
	var out []byte
	err := c.ViewHeld(fileID, []ID{id}, func(rows [][]byte) error {
		out = append(make([]byte, 0, len(rows[0])), rows[0]...)
		return nil
	})
	return out, err
}

// ViewHeld calls fn inside a read transaction with the held bytes of ids,
// straight from the memory map; the same rules as Store.ViewChunks apply
// (valid only during fn, read-only).
func (c *ClientDB) ViewHeld(fileID ID, ids []ID, fn func(rows [][]byte) error) error {
	err := c.db.View(func(tx *bolt.Tx) error {
		d, err := openDownload(tx, fileID)
		if err != nil {
			return err
		}
		if d.rec.Completed {
			return fmt.Errorf("%w: download is complete and holds no chunks", ErrNotFound)
		}
		return viewChunks(d.have, ids, fn)
	})
	if err != nil {
		return fmt.Errorf("store: view %d chunks of download %x: %w", len(ids), fileID[:8], err)
	}
	return nil
}

// CompleteDownload marks a download complete once it holds every chunk it
// needs, and deletes the chunks' bytes and needed set in the same
// transaction. Call it after the output file is written and synced.
func (c *ClientDB) CompleteDownload(fileID ID) (Download, error) {
	var rec Download
	err := c.db.Update(func(tx *bolt.Tx) error {
		d, err := openDownload(tx, fileID)
		if err != nil {
			return err
		}
		if d.rec.Completed {
			rec = d.rec
			return nil
		}
		if d.rec.Held != d.rec.Needed {
			return fmt.Errorf("store: download holds %d of %d chunks", d.rec.Held, d.rec.Needed)
		}
		if err := dropDownloadChunks(tx, fileID); err != nil {
			return err
		}
		d.rec.Completed, d.rec.Bytes = true, 0
		rec = d.rec
		return d.save()
	})
	if err != nil {
		return Download{}, fmt.Errorf("store: complete download %x: %w", fileID[:8], err)
	}
	return rec, nil
}

func dropDownloadChunks(tx *bolt.Tx, fileID ID) error {
	for _, name := range [][]byte{bucketNeed, bucketHave} {
		err := tx.Bucket(name).DeleteBucket(fileID[:])
		if err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
	}
	return nil
}

// RemoveDownload deletes a download with everything it holds (absent is
// not an error).
func (c *ClientDB) RemoveDownload(fileID ID) error {
	err := c.db.Update(func(tx *bolt.Tx) error {
		if err := dropDownloadChunks(tx, fileID); err != nil {
			return err
		}
		return tx.Bucket(bucketDownloads).Delete(fileID[:])
	})
	if err != nil {
		return fmt.Errorf("store: remove download %x: %w", fileID[:8], err)
	}
	return nil
}

// Download returns a download record, or ErrNotFound.
func (c *ClientDB) Download(fileID ID) (Download, error) {
	var rec Download
	err := c.db.View(func(tx *bolt.Tx) error {
		d, err := openDownload(tx, fileID)
		if err == nil {
			rec = d.rec
		}
		return err
	})
	return rec, err
}

// Downloads calls fn for every download, in file id order.
func (c *ClientDB) Downloads(fn func(Download) error) error {
	return c.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDownloads).ForEach(func(_, v []byte) error {
			d, err := decodeDownload(v)
			if err != nil {
				return err
			}
			return fn(d)
		})
	})
}

// PutOnion stores the sealed onion of a round before it is sent (docs/protocol.md
// §5.1: a round is sealed once, and after a crash the stored bytes are
// sent again). Storing the same bytes again is a no-op; different bytes
// for a stored round fail with ErrConflict, so that a second sealing can
// never reach the network through this store.
func (c *ClientDB) PutOnion(epoch EpochID, round uint32, onion []byte) error {
	// Keeping every round from 0 prunes nothing: one write path.
	return c.PutOnionPruned(epoch, round, onion, 0)
}

// Onion returns a copy of a stored onion, or ErrNotFound.
func (c *ClientDB) Onion(epoch EpochID, round uint32) ([]byte, error) {
	var out []byte
	err := c.db.View(func(tx *bolt.Tx) error {
		sub := tx.Bucket(bucketOnions).Bucket(roundKey(epoch, round))
		if sub == nil {
			return fmt.Errorf("%w: onion of round %d of epoch %x", ErrNotFound, round, epoch[:8])
		}
		out = append([]byte{}, sub.Get(chunkDataKey)...)
		return nil
	})
	return out, err
}

// DropOnions deletes every stored onion of an epoch (at its end, §3)
// and returns how many went.
func (c *ClientDB) DropOnions(epoch EpochID) (int, error) {
	var n int
	err := c.db.Update(func(tx *bolt.Tx) error {
		n = 0
		b := tx.Bucket(bucketOnions)
		var keys [][]byte
		cur := b.Cursor()
		for k, _ := cur.Seek(epoch[:]); k != nil && bytes.HasPrefix(k, epoch[:]); k, _ = cur.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			if err := b.DeleteBucket(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: drop onions of epoch %x: %w", epoch[:8], err)
	}
	return n, nil
}
