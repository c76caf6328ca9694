package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Server catch-up (§7 v3). A server keeps each round's final request
// list as signed, so that a server that was out of the epoch's chain can
// check it against the epoch's closing record and learn which chunks and
// manifests the round published; and, for each server it catches up from,
// the number of the last index change it read there.
var (
	bucketLists   = []byte("lists")   // epoch id ‖ u32 round → the final request list as signed (wire RoundList)
	bucketCatchup = []byte("catchup") // peer id → u64 index log cursor
)

// MaxList bounds a stored request list's bytes.
const MaxList = 64 << 20

// PutList keeps a round's final request list, once: the same bytes again
// are taken, others are a conflict. It is pruned with its round.
func (s *Store) PutList(epoch EpochID, round uint32, list []byte) error {
	if len(list) > MaxList {
		return fmt.Errorf("store: request list of %d bytes", len(list))
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketLists)
		key := roundKey(epoch, round)
		if old := bk.Get(key); old != nil {
			if string(old) != string(list) {
				return fmt.Errorf("%w: another list is stored", ErrConflict)
			}
			return nil
		}
		return bk.Put(key, list)
	})
	if err != nil {
		return fmt.Errorf("store: put the list of round %d of epoch %x: %w", round, epoch[:8], err)
	}
	return nil
}

// List returns a round's final request list (ErrNotFound if none).
func (s *Store) List(epoch EpochID, round uint32) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLists).Get(roundKey(epoch, round))
		if v == nil {
			return ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// MaxCatchupPeer bounds a catch-up cursor's key (a peer id).
const MaxCatchupPeer = 128

// CatchupCursor returns the cursor kept for a peer (0 if none).
func (s *Store) CatchupCursor(peer []byte) (uint64, error) {
	var n uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketCatchup).Get(peer)
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("%w: catch-up cursor of %d bytes", errCorrupt, len(v))
		}
		n = binary.BigEndian.Uint64(v)
		return nil
	})
	return n, err
}

// PutCatchupCursor keeps the cursor of a peer.
func (s *Store) PutCatchupCursor(peer []byte, n uint64) error {
	if len(peer) == 0 || len(peer) > MaxCatchupPeer {
		return fmt.Errorf("store: catch-up peer id of %d bytes", len(peer))
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCatchup).Put(peer, binary.BigEndian.AppendUint64(nil, n))
	})
}
