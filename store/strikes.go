package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// A primary's strikes against its own clients (docs/protocol.md §8 "After
// a blame"): bucket client-strikes, created by its first record so that an
// older store opens unchanged.
//
//   - key: "peer " ‖ the client's peer id, or "ip " ‖ the address it
//     connected from, as text (at most maxStrikeKey bytes);
//   - value: u32 strikes ‖ u64 excluded up to epoch number (12 bytes).
//
// The records never leave the primary: an address is evidence against
// nobody (a malicious primary could name any range), so it is kept where
// it was seen and nowhere else.
var bucketClientStrikes = []byte("client-strikes")

const (
	// MaxClientStrikes bounds the records kept; beyond it the record
	// with the lowest excluded-up-to number is dropped first (the one
	// whose exclusion ended longest ago).
	MaxClientStrikes = 1 << 14
	// maxStrikeKey bounds a record's key: "peer " and a peer id's text
	// (about 52 characters for an Ed25519 identity), or "ip " and an IPv6
	// address's text (at most 45).
	maxStrikeKey = 128
	// clientStrikeLen is a record's value: u32 strikes ‖ u64 until.
	clientStrikeLen = 12
)

// ClientStrike is a primary's record of one client peer id or address.
type ClientStrike struct {
	Strikes uint32 // blames that named it here
	Until   uint64 // refused here up to this epoch number
}

func (x ClientStrike) encode() []byte {
	v := binary.BigEndian.AppendUint32(make([]byte, 0, clientStrikeLen), x.Strikes)
	return binary.BigEndian.AppendUint64(v, x.Until)
}

func decodeClientStrike(v []byte) (ClientStrike, error) {
	if len(v) != clientStrikeLen {
		return ClientStrike{}, errors.New("store: client strike record of the wrong size")
	}
	return ClientStrike{Strikes: binary.BigEndian.Uint32(v), Until: binary.BigEndian.Uint64(v[4:])}, nil
}

func checkStrikeKey(key string) error {
	if len(key) > maxStrikeKey || !(strings.HasPrefix(key, "peer ") || strings.HasPrefix(key, "ip ")) {
		return fmt.Errorf("store: client strike key %.40q: not \"peer <id>\" or \"ip <address>\" of at most %d bytes", key, maxStrikeKey)
	}
	return nil
}

// PutClientStrike stores a record, merged with the one on disk: strikes
// and until only grow, so writes that race keep the larger of each. A new
// key beyond MaxClientStrikes drops the record with the lowest until
// first. It returns the record as stored.
func (s *Store) PutClientStrike(key string, x ClientStrike) (ClientStrike, error) {
	if err := checkStrikeKey(key); err != nil {
		return ClientStrike{}, err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketClientStrikes)
		if err != nil {
			return fmt.Errorf("store: create bucket %s: %w", bucketClientStrikes, err)
		}
		if old := bk.Get([]byte(key)); old != nil {
			o, err := decodeClientStrike(old)
			if err != nil {
				return err
			}
			x.Strikes, x.Until = max(x.Strikes, o.Strikes), max(x.Until, o.Until)
		} else if bk.Stats().KeyN >= MaxClientStrikes {
			var low []byte
			var lowUntil uint64
			c := bk.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				o, err := decodeClientStrike(v)
				if err != nil {
					return err
				}
				if low == nil || o.Until < lowUntil {
					low, lowUntil = append(low[:0], k...), o.Until
				}
			}
			if err := bk.Delete(low); err != nil {
				return err
			}
		}
		return bk.Put([]byte(key), x.encode())
	})
	return x, err
}

// ClientStrikes returns every record, copied out of the database.
func (s *Store) ClientStrikes() (map[string]ClientStrike, error) {
	out := map[string]ClientStrike{}
	err := s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketClientStrikes)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			key := string(k) // a copy: k is valid only in the transaction
			if err := checkStrikeKey(key); err != nil {
				return err
			}
			x, err := decodeClientStrike(v)
			if err != nil {
				return err
			}
			out[key] = x
			return nil
		})
	})
	return out, err
}
