package store

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The index log (§7 v3: the index is synced incrementally). Every
// change to the public index, a manifest chunk or an index entry added or
// a manifest removed, gets the next number of the index-log bucket's
// sequence, and a client asks for the changes after the last number it
// holds (its cursor). An id has at most one live add record: indexing it
// again (its entry after its bytes) moves the record to the end, and its
// removal replaces the record with a remove record, so the log holds one
// record per live id plus one per removal.

// Index log operations (the first byte of a record).
const (
	indexAdd    = 1 // the manifest bytes and index entry of the id, as stored now
	indexRemove = 2 // the id left the index
	// indexClosing: the closing record of the epoch whose id the record
	// holds (bucket closing), signed by all m servers (§7 v3).
	indexClosing = 3
)

// indexRecordSize is a log record's size: u8 op ‖ id 32.
const indexRecordSize = 1 + 32

func seqKey(n uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), n) }

// logIndex appends a change of id to the index log inside tx.
func logIndex(tx *bolt.Tx, op byte, id ID) error {
	lb, sb := tx.Bucket(bucketIndexLog), tx.Bucket(bucketIndexSeq)
	if old := sb.Get(id[:]); old != nil {
		if err := lb.Delete(old); err != nil {
			return err
		}
		if err := sb.Delete(id[:]); err != nil {
			return err
		}
	}
	n, err := lb.NextSequence()
	if err != nil {
		return err
	}
	if err := lb.Put(seqKey(n), append([]byte{op}, id[:]...)); err != nil {
		return err
	}
	if op == indexAdd {
		return sb.Put(id[:], seqKey(n))
	}
	return nil
}

// backfillIndexLog logs every indexed id of a store written before the
// index log existed, once (the log is empty and has never been used).
func backfillIndexLog(tx *bolt.Tx) error {
	lb := tx.Bucket(bucketIndexLog)
	if lb.Sequence() != 0 {
		return nil
	}
	var ids []ID
	for _, name := range [][]byte{bucketManifests, bucketIndex} {
		err := tx.Bucket(name).ForEach(func(k, _ []byte) error {
			if len(k) != 32 {
				return fmt.Errorf("%w: %s key of %d bytes", errCorrupt, name, len(k))
			}
			ids = append(ids, ID(k))
			return nil
		})
		if err != nil {
			return err
		}
	}
	now := time.Now()
	for _, id := range ids {
		if tx.Bucket(bucketIndexSeq).Get(id[:]) != nil {
			continue
		}
		if err := logIndex(tx, indexAdd, id); err != nil {
			return err
		}
		// Its index retention starts now.
		if err := tx.Bucket(bucketIndexAge).Put(ageKey(now, id[:]), present); err != nil {
			return err
		}
	}
	return nil
}

// removalKept is how long a remove record stays in the log: the index
// retention and a tenth, the time after which a client drops by itself an
// id it has held (node's expireIndex). A client that first held an id
// before its removal and syncs only after the record left has held it
// longer than that, so it drops the id at that sync: compaction never
// leaves a cursor's view with an id the server removed.
func removalKept(ret time.Duration) time.Duration { return ret + ret/10 }

// closingAgeKey is a closing-age key: when the record was kept ‖ the
// number of its log record.
func closingAgeKey(t time.Time, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(t.UnixNano())), seq)
}

// backfillClosingAge starts the index retention of the closing records
// kept before their age was (closing-age empty, closing not), once.
func backfillClosingAge(tx *bolt.Tx, now time.Time) error {
	ab := tx.Bucket(bucketClosingAge)
	if k, _ := ab.Cursor().First(); k != nil {
		return nil
	}
	if k, _ := tx.Bucket(bucketClosing).Cursor().First(); k == nil {
		return nil
	}
	return tx.Bucket(bucketIndexLog).ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) != indexRecordSize || v[0] != indexClosing {
			return nil
		}
		return ab.Put(closingAgeKey(now, binary.BigEndian.Uint64(k)), v[1:])
	})
}

// pruneIndex removes the manifests indexed before now − ret, with their
// index entries, and logs each removal, up to pruneBatch a transaction.
// It compacts the log: a remove record leaves after removalKept(ret), and
// a closing record kept before now − ret leaves with its bytes (clients
// use the last few epochs' only, §6.3), so that the log holds the live
// ids, the recent removals and the recent closings, not every change ever.
func (s *Store) pruneIndex(now time.Time, ret time.Duration) error {
	cutoff := now.Add(-ret)
	for {
		more := false
		n := 0
		err := s.db.Update(func(tx *bolt.Tx) error {
			more, n = false, 0
			gone, lb := tx.Bucket(bucketIndexGone), tx.Bucket(bucketIndexLog)
			var old [][]byte
			gc := gone.Cursor()
			for k, _ := gc.First(); k != nil && expired(k, now.Add(-removalKept(ret))); k, _ = gc.Next() {
				old = append(old, append([]byte(nil), k...))
			}
			for _, k := range old {
				if len(k) != 16 {
					return fmt.Errorf("%w: index gone key of %d bytes", errCorrupt, len(k))
				}
				if err := lb.Delete(k[8:]); err != nil {
					return err
				}
				if err := gone.Delete(k); err != nil {
					return err
				}
			}
			ab, cb := tx.Bucket(bucketClosingAge), tx.Bucket(bucketClosing)
			old = old[:0]
			ac := ab.Cursor()
			for k, _ := ac.First(); k != nil && expired(k, cutoff); k, _ = ac.Next() {
				old = append(old, append([]byte(nil), k...))
			}
			for _, k := range old {
				epoch := ab.Get(k)
				if len(k) != 16 || len(epoch) != 32 {
					return fmt.Errorf("%w: closing age of %d+%d bytes", errCorrupt, len(k), len(epoch))
				}
				if err := cb.Delete(epoch); err != nil {
					return err
				}
				if err := lb.Delete(k[8:]); err != nil {
					return err
				}
				if err := ab.Delete(k); err != nil {
					return err
				}
			}
			age := tx.Bucket(bucketIndexAge)
			mb, ib := tx.Bucket(bucketManifests), tx.Bucket(bucketIndex)
			var dead [][]byte
			c := age.Cursor()
			for k, _ := c.First(); k != nil && expired(k, cutoff); k, _ = c.Next() {
				if len(dead) == pruneBatch {
					more = true
					break
				}
				dead = append(dead, append([]byte(nil), k...))
			}
			for _, k := range dead {
				if len(k) != 8+32 {
					return fmt.Errorf("%w: index age key of %d bytes", errCorrupt, len(k))
				}
				id := ID(k[8:])
				if mb.Get(id[:]) != nil || ib.Get(id[:]) != nil {
					if err := logIndex(tx, indexRemove, id); err != nil {
						return err
					}
					// When the remove record was made, and its number.
					key := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(now.UnixNano()))
					if err := gone.Put(binary.BigEndian.AppendUint64(key, lb.Sequence()), present); err != nil {
						return err
					}
					n++
				}
				for _, del := range []func() error{
					func() error { return age.Delete(k) },
					func() error { return mb.Delete(id[:]) },
					func() error { return ib.Delete(id[:]) },
				} {
					if err := del(); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: prune index before %v: %w", cutoff, err)
		}
		if n > 0 {
			s.log.Info("index pruned", "manifests", n)
		}
		if !more {
			return nil
		}
	}
}

// IndexChanges is one page of the index log: the manifest chunks and
// index entries added, and the ids removed, after a cursor and up to
// Next. More says that the log goes on after Next.
type IndexChanges struct {
	Next      uint64
	More      bool
	Entries   []IndexEntry
	Manifests []Manifest
	Removed   []ID
	// Closings are epochs' closing records, as signed (§7 v3).
	Closings [][]byte
}

// IndexEntryWireSize is what an index entry weighs on the wire: file id,
// name length and name, u64 size, u32 chunks, u32 round, u64 time.
func IndexEntryWireSize(e *IndexEntry) int { return 32 + 4 + len(e.Name) + 8 + 4 + 4 + 8 }

// IndexSince returns the index changes logged after cursor, in log order,
// up to budget bytes as the wire counts them (IndexEntryWireSize, 4 + the
// bytes of a manifest or of a closing record, 32 for a removed id); a page holds at least one
// change when there is one. A cursor beyond the log (a client that synced
// from a store since replaced) gets an empty page whose Next is the log's
// end, below its cursor: the caller starts again from 0.
func (s *Store) IndexSince(cursor uint64, budget int) (IndexChanges, error) {
	var out IndexChanges
	err := s.db.View(func(tx *bolt.Tx) error {
		lb := tx.Bucket(bucketIndexLog)
		mb, ib := tx.Bucket(bucketManifests), tx.Bucket(bucketIndex)
		last := lb.Sequence()
		out = IndexChanges{Next: cursor}
		if cursor >= last {
			out.Next = last
			return nil
		}
		used := 0
		c := lb.Cursor()
		for k, v := c.Seek(seqKey(cursor + 1)); k != nil; k, v = c.Next() {
			if len(k) != 8 || len(v) != indexRecordSize {
				return fmt.Errorf("%w: index log record of %d+%d bytes", errCorrupt, len(k), len(v))
			}
			id := ID(v[1:])
			var (
				ent     *IndexEntry
				man     *Manifest
				closing []byte
				size    int
			)
			switch v[0] {
			case indexAdd:
				if b := ib.Get(id[:]); b != nil {
					e, err := decodeIndexEntry(b)
					if err != nil {
						return err
					}
					ent = &e
					size += IndexEntryWireSize(&e)
				}
				if b := mb.Get(id[:]); b != nil {
					m, err := decodeManifest(id, b)
					if err != nil {
						return err
					}
					man = &m
					size += 4 + len(m.Data)
				}
			case indexRemove:
				size = 32
			case indexClosing:
				if cb := tx.Bucket(bucketClosing); cb != nil {
					closing = append([]byte(nil), cb.Get(id[:])...)
				}
				size = 4 + len(closing)
			default:
				return fmt.Errorf("%w: index log operation %d", errCorrupt, v[0])
			}
			if used > 0 && used+size > budget {
				out.More = true
				return nil
			}
			used += size
			out.Next = binary.BigEndian.Uint64(k)
			if v[0] == indexRemove {
				out.Removed = append(out.Removed, id)
			}
			if ent != nil {
				out.Entries = append(out.Entries, *ent)
			}
			if man != nil {
				out.Manifests = append(out.Manifests, *man)
			}
			if len(closing) > 0 {
				out.Closings = append(out.Closings, closing)
			}
		}
		return nil
	})
	if err != nil {
		return IndexChanges{}, fmt.Errorf("store: index since %d: %w", cursor, err)
	}
	return out, nil
}

// IndexLogEnd returns the number of the index log's last record (0 for
// none): a cursor at it holds every change.
func (s *Store) IndexLogEnd() (uint64, error) {
	var n uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketIndexLog).Sequence()
		return nil
	})
	return n, err
}
