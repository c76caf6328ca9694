package store

// Retention: what the server store lets go, and when.

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// pruneBatch bounds the chunks deleted per Prune transaction, so that a
// large prune does not hold the writer lock for long.
const pruneBatch = 1024

// Prune deletes what retention lets go as of now: manifests and index
// entries indexed more than IndexRetention ago (logged as removed), and
// the index log's old remove and closing records (pruneIndex); chunks
// not put or used for Retention, except those the index still holds;
// round records older than Retention, and epoch records that ended (or, if
// still open, started) before then. It returns the number of chunks
// removed. With no retention set it does nothing. Each transaction is
// consistent on its own: a crash mid-prune leaves whole entries only.
func (s *Store) Prune(now time.Time) (removed int, err error) {
	if s.opts.IndexRetention > 0 {
		if err := s.pruneIndex(now, s.opts.IndexRetention); err != nil {
			return 0, err
		}
	}
	if s.opts.Retention == 0 {
		return 0, nil
	}
	cutoff := now.Add(-s.opts.Retention)
	for {
		n, more, err := s.pruneChunks(cutoff)
		removed += n
		if err != nil {
			return removed, fmt.Errorf("store: prune chunks before %v: %w", cutoff, err)
		}
		if !more {
			break
		}
	}
	var rounds, epochs int
	err = s.db.Update(func(tx *bolt.Tx) error {
		rounds, epochs = 0, 0
		age, rb := tx.Bucket(bucketRoundAge), tx.Bucket(bucketRounds)
		var dead [][]byte
		c := age.Cursor()
		for k, _ := c.First(); k != nil && expired(k, cutoff); k, _ = c.Next() {
			dead = append(dead, append([]byte(nil), k...))
		}
		for _, k := range dead {
			if err := rb.Delete(k[8:]); err != nil {
				return err
			}
			if err := tx.Bucket(bucketPairs).Delete(k[8:]); err != nil {
				return err
			}
			if err := tx.Bucket(bucketLists).Delete(k[8:]); err != nil {
				return err
			}
			if err := age.Delete(k); err != nil {
				return err
			}
			rounds++
		}
		eb, ids := tx.Bucket(bucketEpochs), tx.Bucket(bucketEpochIDs)
		dead = dead[:0]
		err := eb.ForEach(func(k, v []byte) error {
			e, err := decodeEpochRecord(v)
			if err != nil {
				return err
			}
			last := e.Ended
			if last.IsZero() {
				last = e.Started
			}
			if last.Before(cutoff) {
				dead = append(dead, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range dead {
			if err := eb.Delete(k); err != nil {
				return err
			}
			if err := ids.Delete(k[8:]); err != nil {
				return err
			}
			epochs++
		}
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("store: prune records before %v: %w", cutoff, err)
	}
	if removed+rounds+epochs > 0 {
		s.log.Info("store pruned", "chunks", removed, "rounds", rounds, "epochs", epochs, "usage", s.Usage())
	}
	return removed, nil
}

// expired reports whether an age key (u64 time ns ‖ …) is before cutoff.
func expired(k []byte, cutoff time.Time) bool {
	return len(k) >= 8 && int64(binary.BigEndian.Uint64(k)) < cutoff.UnixNano()
}

// pruneChunks deletes up to pruneBatch expired chunks in one transaction.
func (s *Store) pruneChunks(cutoff time.Time) (n int, more bool, err error) {
	var (
		usage int64
		txid  int
		holes []chunkLoc
		drop  []uint32
	)
	err = s.db.Update(func(tx *bolt.Tx) error {
		n, more = 0, false
		w, err := s.newWriter(tx, cutoff)
		if err != nil {
			return err
		}
		var dead [][]byte
		holes = holes[:0]
		idx, mb := tx.Bucket(bucketIndex), tx.Bucket(bucketManifests)
		c := w.age.Cursor()
		for k, _ := c.First(); k != nil && expired(k, cutoff); k, _ = c.Next() {
			if len(dead) == pruneBatch {
				more = true
				break
			}
			// An indexed chunk (a manifest, a file's root) stays while
			// the index holds it: the index's retention is the group's,
			// not this operator's (§7 v3; pruneIndex).
			if len(k) == 8+32 && (idx.Get(k[8:]) != nil || mb.Get(k[8:]) != nil) {
				continue
			}
			dead = append(dead, append([]byte(nil), k...))
		}
		for _, k := range dead {
			if len(k) != 8+32 {
				return fmt.Errorf("%w: chunk age key of %d bytes", errCorrupt, len(k))
			}
			id := k[8:]
			if v := w.chunks.Get(id); v != nil {
				l, err := decodeChunkLoc(v)
				if err != nil {
					return fmt.Errorf("chunk %x: %w", id[:4], err)
				}
				if err := w.segs.free(l); err != nil {
					return err
				}
				w.usage -= int64(l.length)
				holes = append(holes, l)
				if err := w.chunks.Delete(id); err != nil {
					return err
				}
			}
			for _, del := range []func() error{
				func() error { return w.meta.Delete(id) },
				func() error { return w.age.Delete(k) },
			} {
				if err := del(); err != nil {
					return err
				}
			}
			n++
		}
		if err := w.finish(); err != nil {
			return err
		}
		usage, txid, drop = w.usage, tx.ID(), w.drop
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	s.setUsage(txid, usage)
	s.segs.retire(holes, drop)
	return n, more, nil
}
