package store

import (
	"bytes"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Interrupted shares resume (docs/proto-store.md, "Share resume"): per
// share, under a key the node derives from the file (its id, or for a
// private file a hash of its plaintext), the link and the chunks that
// went out.
var bucketResume = []byte("share-resume") // key → bucket {"link", "t", chunk id → state}

var (
	resumeLinkKey = []byte("link")
	resumeTimeKey = []byte("t")
)

// Chunk states of a resumable share.
const (
	ChunkSent      = 1 // went out in a round (stored with its onion, before sending)
	ChunkPublished = 2 // seen in a round's published list
)

// MaxResumableShares bounds the shares kept for resuming; past it the
// oldest goes.
const MaxResumableShares = 64

// ShareMark names a chunk of a resumable share carried by a round.
type ShareMark struct {
	Key, Chunk ID
}

// ResumeShare returns a resumable share's link and its chunks' states
// (ok false: none under key).
func (c *ClientDB) ResumeShare(key ID) (link string, states map[ID]uint8, ok bool, err error) {
	err = c.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketResume).Bucket(key[:])
		if b == nil {
			return nil
		}
		ok, link, states = true, string(b.Get(resumeLinkKey)), map[ID]uint8{}
		return b.ForEach(func(k, v []byte) error {
			if len(k) == len(ID{}) && len(v) == 1 {
				states[ID(k)] = v[0]
			}
			return nil
		})
	})
	return link, states, ok, err
}

// StartShareResume records a share as resumable under key with its link,
// dropping the oldest past MaxResumableShares. An existing record stays.
func (c *ClientDB) StartShareResume(key ID, link string, now time.Time) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketResume)
		if all.Bucket(key[:]) != nil {
			return nil
		}
		var oldest []byte
		var oldestT uint64
		n := 0
		err := all.ForEach(func(k, _ []byte) error {
			n++
			t := uint64(0)
			if v := all.Bucket(k).Get(resumeTimeKey); len(v) == 8 {
				t = binary.BigEndian.Uint64(v)
			}
			if oldest == nil || t < oldestT {
				oldest, oldestT = bytes.Clone(k), t
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n >= MaxResumableShares {
			if err := all.DeleteBucket(oldest); err != nil {
				return err
			}
		}
		b, err := all.CreateBucket(key[:])
		if err != nil {
			return err
		}
		if err := b.Put(resumeTimeKey, binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano()))); err != nil {
			return err
		}
		return b.Put(resumeLinkKey, []byte(link))
	})
}

// markShare raises a chunk's state in tx (a record gone meanwhile is fine).
func markShare(tx *bolt.Tx, m ShareMark, state uint8) error {
	b := tx.Bucket(bucketResume).Bucket(m.Key[:])
	if b == nil {
		return nil
	}
	if v := b.Get(m.Chunk[:]); len(v) == 1 && v[0] >= state {
		return nil
	}
	return b.Put(m.Chunk[:], []byte{state})
}

// MarkSharePublished records a chunk seen in a published list.
func (c *ClientDB) MarkSharePublished(m ShareMark) error {
	return c.db.Update(func(tx *bolt.Tx) error { return markShare(tx, m, ChunkPublished) })
}

// DropShareResume forgets a resumable share (it finished).
func (c *ClientDB) DropShareResume(key ID) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketResume).DeleteBucket(key[:])
		if err == berrors.ErrBucketNotFound {
			return nil
		}
		return err
	})
}

// PutOnionMarked is PutOnionPruned that also records, in the same
// transaction, the chunk the onion carries as sent: the node stores every
// round's onion this way, cover or not, so a round with a chunk costs no
// extra disk sync (its timing says nothing about the job).
func (c *ClientDB) PutOnionMarked(epoch EpochID, round uint32, onion []byte, keepFrom uint32, mark *ShareMark) error {
	if mark == nil {
		return c.PutOnionPruned(epoch, round, onion, keepFrom)
	}
	return c.putOnion(epoch, round, onion, keepFrom, func(tx *bolt.Tx) error { return markShare(tx, *mark, ChunkSent) })
}
