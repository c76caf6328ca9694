package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// PutOnionPruned is PutOnion that also deletes, in the same transaction,
// the epoch's stored onions of rounds below keepFrom. Their rounds are
// over: they are never sent again, not even after a crash, so keeping them
// to the epoch's end only grew the file (bbolt never gives pages back;
// it reuses freed ones). With pruning, a client's file holds a few onions
// at a time and stays at that size. One transaction, so no extra sync.
func (c *ClientDB) PutOnionPruned(epoch EpochID, round uint32, onion []byte, keepFrom uint32) error {
	return c.putOnion(epoch, round, onion, keepFrom, nil)
}

// putOnion is PutOnionPruned with more to do in the same transaction.
func (c *ClientDB) putOnion(epoch EpochID, round uint32, onion []byte, keepFrom uint32, also func(*bolt.Tx) error) error {
	if len(onion) > MaxOnionSize {
		return fmt.Errorf("store: onion of %d bytes exceeds %d", len(onion), MaxOnionSize)
	}
	key := roundKey(epoch, round)
	limit := roundKey(epoch, keepFrom)
	err := c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOnions)
		var old [][]byte
		cur := b.Cursor()
		for k, _ := cur.Seek(epoch[:]); k != nil && bytes.HasPrefix(k, epoch[:]) && bytes.Compare(k, limit) < 0; k, _ = cur.Next() {
			if !bytes.Equal(k, key) {
				old = append(old, append([]byte(nil), k...))
			}
		}
		for _, k := range old {
			if err := b.DeleteBucket(k); err != nil {
				return err
			}
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		if sub := b.Bucket(key); sub != nil {
			if !bytes.Equal(sub.Get(chunkDataKey), onion) {
				return ErrConflict
			}
			return nil
		}
		sub, err := b.CreateBucket(key)
		if err != nil {
			return err
		}
		sub.FillPercent = 1
		return sub.Put(chunkDataKey, onion)
	})
	if err != nil {
		return fmt.Errorf("store: put onion of round %d of epoch %x: %w", round, epoch[:8], err)
	}
	return nil
}
