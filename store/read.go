package store

// Reads of the server store: chunks, requests, the index, round records.

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// GetChunk returns a copy of a chunk's bytes, or ErrNotFound.
func (s *Store) GetChunk(id ID) ([]byte, error) {
	var out []byte
	err := s.ViewChunks([]ID{id}, func(rows [][]byte) error {
		out = append(make([]byte, 0, len(rows[0])), rows[0]...)
		return nil
	})
	return out, err
}

// HasChunk reports whether a chunk is stored.
func (s *Store) HasChunk(id ID) (bool, error) {
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketChunkMeta).Get(id[:]) != nil
		return nil
	})
	return ok, err
}

// HeldRequests returns, in the order given, a request (id and length) for
// each of ids that is stored, skipping the others, from one read
// transaction: what the leader needs to propose a request list and what
// any server needs to find what it must fetch (§5.3).
func (s *Store) HeldRequests(ids []ID) ([]Request, error) {
	var out []Request
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketChunkMeta)
		for _, id := range ids {
			v := meta.Get(id[:])
			if v == nil {
				continue
			}
			m, err := decodeChunkMeta(v)
			if err != nil {
				return fmt.Errorf("chunk %x: %w", id[:8], err)
			}
			out = append(out, Request{ID: id, Length: m.length})
		}
		return nil
	})
	return out, err
}

// ViewChunks calls fn with the bytes of the chunks ids, in order, from
// one snapshot, straight from the segments' memory maps: no copy, however
// big the rows. The slices are valid only until fn returns (a pruned
// chunk's bytes are given back once no reader needs them) and are
// read-only (writing to them faults). A missing id fails with ErrNotFound
// before fn is called. No bbolt transaction is held while fn runs, so fn
// may use the store, writes included, and a long fn (a PIR pass) delays
// only the reuse of pruned space.
func (s *Store) ViewChunks(ids []ID, fn func(rows [][]byte) error) error {
	g := s.segs.pin()
	defer s.segs.unpin(g)
	locs := make([]chunkLoc, len(ids))
	err := s.db.View(func(tx *bolt.Tx) error {
		chunks := tx.Bucket(bucketChunks)
		for i, id := range ids {
			v := chunks.Get(id[:])
			if v == nil {
				return fmt.Errorf("%w: chunk %x (row %d of %d)", ErrNotFound, id[:8], i, len(ids))
			}
			l, err := decodeChunkLoc(v)
			if err != nil {
				return fmt.Errorf("chunk %x: %w", id[:8], err)
			}
			locs[i] = l
		}
		return nil
	})
	if err != nil {
		return err
	}
	rows := make([][]byte, len(ids))
	for i, l := range locs {
		if rows[i], err = s.segs.read(l); err != nil {
			return err
		}
	}
	return fn(rows)
}

// Index calls fn for every entry of the public index, in file id order,
// inside one read transaction (a consistent snapshot). An error from fn
// stops the walk and is returned.
func (s *Store) Index(fn func(IndexEntry) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIndex).ForEach(func(k, v []byte) error {
			e, err := decodeIndexEntry(v)
			if err != nil {
				return err
			}
			return fn(e)
		})
	})
}

// IndexEntry returns the index entry of a file id, if any.
func (s *Store) IndexEntry(fileID ID) (IndexEntry, bool, error) {
	var (
		e  IndexEntry
		ok bool
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketIndex).Get(fileID[:])
		if v == nil {
			return nil
		}
		var err error
		e, err = decodeIndexEntry(v)
		ok = err == nil
		return err
	})
	return e, ok, err
}

// Round returns the record of a round, or ErrNotFound.
func (s *Store) Round(epoch EpochID, round uint32) (RoundRecord, error) {
	var r RoundRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketRounds).Get(roundKey(epoch, round))
		if v == nil {
			return fmt.Errorf("%w: round %d of epoch %x", ErrNotFound, round, epoch[:8])
		}
		var err error
		r, err = decodeRoundRecord(v)
		return err
	})
	return r, err
}
