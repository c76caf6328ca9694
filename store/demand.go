package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The public demand of a round and the closing record of an epoch (docs/protocol.md
// §7 v3). Each round's signed request list carries its (output position,
// requested id) pairs, kept here by round; each epoch's closing record,
// signed by all m chain servers, is kept by epoch id and logged in the
// index log, so that clients get it with their index sync.
var (
	bucketPairs   = []byte("pairs")   // epoch id ‖ u32 round → u32 n ‖ n × (u32 position ‖ id 32)
	bucketClosing = []byte("closing") // epoch id → the closing record as signed (wire encoding)
)

// Pair is one (output position, requested id) pair of a round's request
// list.
type Pair struct {
	Pos uint32
	ID  ID
}

// maxPairs bounds the pairs of one round as decoded (n·k at the caps).
const maxPairs = 1 << 24

// MaxClosing bounds a stored closing record's bytes.
const MaxClosing = 1 << 20

func encodePairs(ps []Pair) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+36*len(ps)), uint32(len(ps)))
	for _, p := range ps {
		b = binary.BigEndian.AppendUint32(b, p.Pos)
		b = append(b, p.ID[:]...)
	}
	return b
}

func decodePairs(b []byte) ([]Pair, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: pairs of %d bytes", errCorrupt, len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if n > maxPairs || int64(len(b)-4) != int64(n)*36 {
		return nil, fmt.Errorf("%w: %d pairs in %d bytes", errCorrupt, n, len(b))
	}
	out := make([]Pair, n)
	for i := range out {
		o := 4 + 36*i
		out[i].Pos = binary.BigEndian.Uint32(b[o:])
		out[i].ID = ID(b[o+4 : o+36])
	}
	return out, nil
}

// PutPairs keeps the pairs of a round's final request list. Pairs are
// written once: the same pairs again are accepted, different ones are a
// conflict.
func (s *Store) PutPairs(epoch EpochID, round uint32, ps []Pair) error {
	enc := encodePairs(ps)
	err := s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketPairs)
		if err != nil {
			return err
		}
		key := roundKey(epoch, round)
		if old := bk.Get(key); old != nil {
			if string(old) != string(enc) {
				return fmt.Errorf("%w: other pairs are stored", ErrConflict)
			}
			return nil
		}
		return bk.Put(key, enc)
	})
	if err != nil {
		return fmt.Errorf("store: put %d pairs of round %d of epoch %x: %w", len(ps), round, epoch[:8], err)
	}
	return nil
}

// Pairs returns the pairs of a round (ErrNotFound if none are kept).
func (s *Store) Pairs(epoch EpochID, round uint32) ([]Pair, error) {
	var out []Pair
	err := s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketPairs)
		if bk == nil {
			return ErrNotFound
		}
		v := bk.Get(roundKey(epoch, round))
		if v == nil {
			return ErrNotFound
		}
		var err error
		out, err = decodePairs(v)
		return err
	})
	return out, err
}

// PutClosing keeps an epoch's closing record (checked by the caller) and
// logs it in the index log, once: a second, different record of the same
// epoch is a conflict.
func (s *Store) PutClosing(epoch EpochID, rec []byte) error {
	if len(rec) > MaxClosing {
		return fmt.Errorf("store: closing record of %d bytes", len(rec))
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketClosing)
		if err != nil {
			return err
		}
		if old := bk.Get(epoch[:]); old != nil {
			if string(old) != string(rec) {
				return fmt.Errorf("%w: another closing record is stored", ErrConflict)
			}
			return nil
		}
		if err := bk.Put(epoch[:], rec); err != nil {
			return err
		}
		if err := logIndex(tx, indexClosing, ID(epoch)); err != nil {
			return err
		}
		// Its index retention starts now (pruneIndex).
		return tx.Bucket(bucketClosingAge).Put(closingAgeKey(s.now(), tx.Bucket(bucketIndexLog).Sequence()), epoch[:])
	})
	if err != nil {
		return fmt.Errorf("store: put the closing record of epoch %x: %w", epoch[:8], err)
	}
	return nil
}

// Closing returns an epoch's closing record (ErrNotFound if none).
func (s *Store) Closing(epoch EpochID) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketClosing)
		if bk == nil {
			return ErrNotFound
		}
		v := bk.Get(epoch[:])
		if v == nil {
			return ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}
