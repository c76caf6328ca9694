package store

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxServerKey bounds a cursor's key: a server's peer id in bytes.
const maxServerKey = 128

// IndexCursor returns the cursor reached in the index log of server (0:
// nothing synced from it yet).
func (c *ClientDB) IndexCursor(server []byte) (uint64, error) {
	var n uint64
	err := c.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSyncCursors).Get(server)
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("%w: index cursor of %d bytes", errCorrupt, len(v))
		}
		n = binary.BigEndian.Uint64(v)
		return nil
	})
	return n, err
}

// ApplyIndex adds one page of index changes synced from server to the
// synced copy and moves the server's cursor to next, in one transaction,
// so that a restarted client goes on from what it holds. Removed ids leave
// the copy (the caller passes the removals it accepts); an id already held
// keeps its first bytes, entry and time; a new one is held from now. Each
// manifest must hash to its id.
func (c *ClientDB) ApplyIndex(server []byte, next uint64, now time.Time, entries []IndexEntry, mans []Manifest, removed []ID) error {
	if len(server) == 0 || len(server) > maxServerKey {
		return fmt.Errorf("store: index cursor key of %d bytes", len(server))
	}
	for _, m := range mans {
		if len(m.Data) > MaxChunkSize || sha256.Sum256(m.Data) != m.ID {
			return fmt.Errorf("store: synced manifest %x: %w", m.ID[:8], ErrBadChunk)
		}
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		eb, mb, sb := tx.Bucket(bucketSyncEntries), tx.Bucket(bucketSyncMans), tx.Bucket(bucketSyncSeen)
		for _, id := range removed {
			for _, b := range []*bolt.Bucket{eb, mb, sb} {
				if err := b.Delete(id[:]); err != nil {
					return err
				}
			}
		}
		seen := binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano()))
		for i := range mans {
			if mb.Get(mans[i].ID[:]) != nil {
				continue
			}
			if err := mb.Put(mans[i].ID[:], mans[i].Data); err != nil {
				return err
			}
			if sb.Get(mans[i].ID[:]) == nil {
				if err := sb.Put(mans[i].ID[:], seen); err != nil {
					return err
				}
			}
		}
		for i := range entries {
			e := entries[i]
			e.Name = cleanName(e.Name)
			if eb.Get(e.FileID[:]) != nil {
				continue
			}
			if err := eb.Put(e.FileID[:], e.encode()); err != nil {
				return err
			}
			if sb.Get(e.FileID[:]) == nil {
				if err := sb.Put(e.FileID[:], seen); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketSyncCursors).Put(server, binary.BigEndian.AppendUint64(nil, next))
	})
	if err != nil {
		return fmt.Errorf("store: apply synced index: %w", err)
	}
	return nil
}

// ExpireIndex drops from the synced copy the ids first held before
// before, and returns them.
func (c *ClientDB) ExpireIndex(before time.Time) ([]ID, error) {
	var dead []ID
	err := c.db.Update(func(tx *bolt.Tx) error {
		dead = dead[:0]
		eb, mb, sb := tx.Bucket(bucketSyncEntries), tx.Bucket(bucketSyncMans), tx.Bucket(bucketSyncSeen)
		err := sb.ForEach(func(k, v []byte) error {
			if len(k) != 32 || len(v) != 8 {
				return fmt.Errorf("%w: synced index time of %d+%d bytes", errCorrupt, len(k), len(v))
			}
			if int64(binary.BigEndian.Uint64(v)) < before.UnixNano() {
				dead = append(dead, ID(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range dead {
			for _, b := range []*bolt.Bucket{eb, mb, sb} {
				if err := b.Delete(id[:]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: expire synced index: %w", err)
	}
	return dead, nil
}

// SyncedIndex returns the synced copy of the index: its entries, in file
// id order, its manifest chunks by id, and when each id was first held.
func (c *ClientDB) SyncedIndex() ([]IndexEntry, map[ID][]byte, map[ID]time.Time, error) {
	var (
		entries []IndexEntry
		mans    = map[ID][]byte{}
		seen    = map[ID]time.Time{}
	)
	err := c.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketSyncSeen).ForEach(func(k, v []byte) error {
			if len(k) != 32 || len(v) != 8 {
				return fmt.Errorf("%w: synced index time of %d+%d bytes", errCorrupt, len(k), len(v))
			}
			seen[ID(k)] = time.Unix(0, int64(binary.BigEndian.Uint64(v)))
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketSyncEntries).ForEach(func(_, v []byte) error {
			e, err := decodeIndexEntry(v)
			if err != nil {
				return err
			}
			entries = append(entries, e)
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketSyncMans).ForEach(func(k, v []byte) error {
			if len(k) != 32 {
				return fmt.Errorf("%w: synced manifest key of %d bytes", errCorrupt, len(k))
			}
			mans[ID(k)] = append([]byte(nil), v...)
			return nil
		})
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("store: synced index: %w", err)
	}
	return entries, mans, seen, nil
}
