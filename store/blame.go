package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketBlame holds the server's round-blame records (docs/protocol.md §8):
// epoch id ‖ u32 round → a BlameRecord as JSON. It is created by the first
// record, so that a store written before it opens unchanged.
var bucketBlame = []byte("blame")

// maxBlameRecord bounds one stored record (the evidence holds at most m+1
// signed entries of one onion each; a 4 MiB chunk with m = 8 stays below).
const maxBlameRecord = 64 << 20

// BlameRecord is what a server keeps of one round blame: the culprit and the
// public evidence that names it, machine-readable.
type BlameRecord struct {
	Epoch  [32]byte `json:"epoch"`
	Number uint64   `json:"number"`
	Round  uint32   `json:"round"`
	// Role is "server" or "client"; Server is the culprit's chain position
	// and PeerID its libp2p id, or Slot the culprit client's input slot.
	Role   string `json:"role"`
	Server int    `json:"server,omitempty"`
	PeerID string `json:"peer_id,omitempty"`
	Slot   int    `json:"slot,omitempty"`
	Reason string `json:"reason"`
	// Evidence is the accusation (if any) and every checked walk step, each
	// as its signed wire encoding.
	Evidence [][]byte `json:"evidence"`
	Time     int64    `json:"time"`
}

func blameKey(epoch [32]byte, round uint32) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(nil), epoch[:]...), round)
}

// PutBlame stores one blame record (a second record for one round replaces
// the first).
func (s *Store) PutBlame(rec BlameRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("store: encode blame record: %w", err)
	}
	if len(b) > maxBlameRecord {
		return fmt.Errorf("store: blame record of %d bytes > cap %d", len(b), maxBlameRecord)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketBlame)
		if err != nil {
			return fmt.Errorf("store: create bucket %s: %w", bucketBlame, err)
		}
		return bk.Put(blameKey(rec.Epoch, rec.Round), b)
	})
}

// Blames returns every blame record, by epoch id and round.
func (s *Store) Blames() ([]BlameRecord, error) {
	var out []BlameRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketBlame)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			if len(k) != 36 {
				return errors.New("store: blame key of the wrong size")
			}
			var rec BlameRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("store: blame record: %w", err)
			}
			out = append(out, rec)
			return nil
		})
	})
	return out, err
}
