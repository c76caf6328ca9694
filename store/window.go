package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The decoy window (SPEC §6.3 v3). A server keeps, for the last epochs it
// served in, what a client needs to check them without having taken part:
// the descriptor without its clients and the epoch's decoy pool (the
// closing record is in the closing bucket). A client keeps the window it
// last held, so that a restart does not make it a newcomer.
var (
	bucketWindow       = []byte("window")       // u64 number ‖ epoch id → item bytes (server)
	bucketClientWindow = []byte("decoy-window") // epoch id → item bytes (client)
)

// MaxWindowKept bounds the epochs either side keeps.
const MaxWindowKept = 64

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

// PutDecoyWindow replaces the client's kept window with items (epoch id →
// item bytes), at most MaxWindowKept of them.
func (c *ClientDB) PutDecoyWindow(items map[ID][]byte) error {
	if len(items) > MaxWindowKept {
		return fmt.Errorf("store: window of %d epochs", len(items))
	}
	return c.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketClientWindow) != nil {
			if err := tx.DeleteBucket(bucketClientWindow); err != nil {
				return err
			}
		}
		bk, err := tx.CreateBucket(bucketClientWindow)
		if err != nil {
			return err
		}
		for id, b := range items {
			if len(b) > MaxWindowItem {
				return fmt.Errorf("store: window item of %d bytes", len(b))
			}
			if err := bk.Put(id[:], b); err != nil {
				return err
			}
		}
		return nil
	})
}

// DecoyWindow returns the client's kept window.
func (c *ClientDB) DecoyWindow() (map[ID][]byte, error) {
	out := map[ID][]byte{}
	err := c.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketClientWindow)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			if len(k) != 32 {
				return fmt.Errorf("%w: window key of %d bytes", errCorrupt, len(k))
			}
			out[ID(k)] = append([]byte(nil), v...)
			return nil
		})
	})
	return out, err
}
