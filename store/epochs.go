package store

// The epoch records of the server store.

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// epochKey is an epoch record's key: the number first, so that records
// iterate in number order.
func epochKey(number uint64, id EpochID) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 40), number), id[:]...)
}

// PutEpoch stores or replaces an epoch record (at setup, and again when
// the epoch ends).
func (s *Store) PutEpoch(rec EpochRecord) error {
	if err := rec.validate(); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		ids := tx.Bucket(bucketEpochIDs)
		if v := ids.Get(rec.ID[:]); v != nil && (len(v) != 8 || binary.BigEndian.Uint64(v) != rec.Number) {
			return fmt.Errorf("%w: epoch %x is stored under another number", ErrConflict, rec.ID[:8])
		}
		if err := ids.Put(rec.ID[:], binary.BigEndian.AppendUint64(nil, rec.Number)); err != nil {
			return err
		}
		return tx.Bucket(bucketEpochs).Put(epochKey(rec.Number, rec.ID), rec.encode())
	})
	if err != nil {
		return fmt.Errorf("store: put epoch %d (%x): %w", rec.Number, rec.ID[:8], err)
	}
	return nil
}

// Epoch returns the record of an epoch id, or ErrNotFound.
func (s *Store) Epoch(id EpochID) (EpochRecord, error) {
	var e EpochRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		n := tx.Bucket(bucketEpochIDs).Get(id[:])
		v := []byte(nil)
		if len(n) == 8 {
			v = tx.Bucket(bucketEpochs).Get(epochKey(binary.BigEndian.Uint64(n), id))
		}
		if v == nil {
			return fmt.Errorf("%w: epoch %x", ErrNotFound, id[:8])
		}
		var err error
		e, err = decodeEpochRecord(v)
		return err
	})
	return e, err
}

// Epochs calls fn for every epoch record with number ≥ from, in number
// order (retried setups of one number in id order), inside one read
// transaction. An error from fn stops the walk and is returned.
func (s *Store) Epochs(from uint64, fn func(EpochRecord) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketEpochs).Cursor()
		for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, from)); k != nil; k, v = c.Next() {
			e, err := decodeEpochRecord(v)
			if err != nil {
				return err
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	})
}
