package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Long-term client keys (docs/protocol.md §8 "After a blame", §5.4). Two
// buckets, created by their first record so that an older store opens
// unchanged:
//
//   - key-excluded: long-term key → u32 strikes ‖ u64 until ‖ evidence
//     (the KeyEvidence that named the key last, as it came): every server
//     refuses the key up to epoch number until.
//   - key-seen: long-term key → u64 clean ‖ u32 dry: a primary's own record
//     of its clients, the last epoch number the key held its slot to the
//     end cleanly, and how often its slot ran dry.
var (
	bucketKeyExcluded = []byte("key-excluded")
	bucketKeySeen     = []byte("key-seen")
)

// maxKeyEvidence bounds the evidence kept with an exclusion (a KeyEvidence
// is 132 bytes).
const maxKeyEvidence = 1024

// KeyExclusion is a long-term client key's exclusion record.
type KeyExclusion struct {
	Strikes  uint32 // blames that named the key
	Until    uint64 // refused up to this epoch number
	Evidence []byte // the last KeyEvidence, as received
}

// KeySeen is a primary's record of one of its clients' long-term keys.
type KeySeen struct {
	Clean uint64 // last epoch number the key held its slot to the end, unnamed
	Dry   uint32 // how often its slot ran dry (halved by each clean epoch)
}

// PutKeyExclusion stores a key's exclusion record.
func (s *Store) PutKeyExclusion(key [32]byte, x KeyExclusion) error {
	if len(x.Evidence) > maxKeyEvidence {
		return fmt.Errorf("store: key evidence of %d bytes > cap %d", len(x.Evidence), maxKeyEvidence)
	}
	v := binary.BigEndian.AppendUint32(nil, x.Strikes)
	v = binary.BigEndian.AppendUint64(v, x.Until)
	v = append(v, x.Evidence...)
	return s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketKeyExcluded)
		if err != nil {
			return fmt.Errorf("store: create bucket %s: %w", bucketKeyExcluded, err)
		}
		return bk.Put(key[:], v)
	})
}

// KeyExclusions returns every key's exclusion record.
func (s *Store) KeyExclusions() (map[[32]byte]KeyExclusion, error) {
	out := map[[32]byte]KeyExclusion{}
	err := s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketKeyExcluded)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			if len(k) != 32 || len(v) < 12 {
				return errors.New("store: key exclusion record of the wrong size")
			}
			var key [32]byte
			copy(key[:], k)
			out[key] = KeyExclusion{Strikes: binary.BigEndian.Uint32(v), Until: binary.BigEndian.Uint64(v[4:]), Evidence: append([]byte(nil), v[12:]...)}
			return nil
		})
	})
	return out, err
}

// PutKeySeen stores a primary's record of a key.
func (s *Store) PutKeySeen(key [32]byte, r KeySeen) error {
	v := binary.BigEndian.AppendUint64(nil, r.Clean)
	v = binary.BigEndian.AppendUint32(v, r.Dry)
	return s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketKeySeen)
		if err != nil {
			return fmt.Errorf("store: create bucket %s: %w", bucketKeySeen, err)
		}
		return bk.Put(key[:], v)
	})
}

// DeleteKeySeen drops a primary's record of a key.
func (s *Store) DeleteKeySeen(key [32]byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketKeySeen)
		if bk == nil {
			return nil
		}
		return bk.Delete(key[:])
	})
}

// KeysSeen returns a primary's records of its clients' keys.
func (s *Store) KeysSeen() (map[[32]byte]KeySeen, error) {
	out := map[[32]byte]KeySeen{}
	err := s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketKeySeen)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			if len(k) != 32 || len(v) != 12 {
				return errors.New("store: key record of the wrong size")
			}
			var key [32]byte
			copy(key[:], k)
			out[key] = KeySeen{Clean: binary.BigEndian.Uint64(v), Dry: binary.BigEndian.Uint32(v[8:])}
			return nil
		})
	})
	return out, err
}
