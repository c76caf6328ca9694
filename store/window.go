package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The decoy window (§6.3 v3). A server keeps, for the last epochs it
// served in, what a client needs to check them without having taken part:
// the descriptor without its clients, a closing record and the decoy
// pool it signs, and the walks it checked. A client keeps nothing: it
// fetches the whole window for every epoch, so that what it held before
// never shows.
var bucketWindow = []byte("window") // u64 number ‖ key → item bytes (the key is the caller's)

// MaxWindowKept bounds the entries a server keeps: a few a number (the
// walk checked for it, an epoch's own item and the item of a record a
// walk pinned), over the walk's 16 numbers (BudgetLookback) and then
// some.
const MaxWindowKept = 128

// MaxWindowItem bounds one kept item's bytes.
const MaxWindowItem = 1 << 23

// PutWindowItem keeps an epoch's window item (a server's), dropping the
// lowest numbers beyond MaxWindowKept.
func (s *Store) PutWindowItem(number uint64, epoch EpochID, item []byte) error {
	if len(item) > MaxWindowItem {
		return fmt.Errorf("store: window item of %d bytes", len(item))
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketWindow)
		if err != nil {
			return err
		}
		if err := bk.Put(epochKey(number, epoch), item); err != nil {
			return err
		}
		n := bk.Stats().KeyN
		c := bk.Cursor()
		for k, _ := c.First(); k != nil && n > MaxWindowKept; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
			n--
		}
		return nil
	})
}

// WindowItem returns a kept window item (ErrNotFound if none).
func (s *Store) WindowItem(number uint64, epoch EpochID) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketWindow)
		if bk == nil {
			return ErrNotFound
		}
		v := bk.Get(epochKey(number, epoch))
		if v == nil {
			return ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}
