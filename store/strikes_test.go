package store

import (
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestClientStrikes: a primary's strikes survive a reopen, merge upward,
// refuse malformed keys, and stay under MaxClientStrikes by dropping the
// lowest until (docs/proto-store.md, "Server file: buckets").
func TestClientStrikes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if x, err := s.ClientStrikes(); err != nil || len(x) != 0 {
		t.Fatalf("fresh store: %d strikes, %v", len(x), err)
	}
	if _, err := s.PutClientStrike("peer 12D3KooWA", ClientStrike{Strikes: 2, Until: 19}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutClientStrike("ip 198.51.100.7", ClientStrike{Strikes: 1, Until: 7}); err != nil {
		t.Fatal(err)
	}
	// An older write that lands late keeps the larger values.
	if got, err := s.PutClientStrike("peer 12D3KooWA", ClientStrike{Strikes: 1, Until: 8}); err != nil || got != (ClientStrike{2, 19}) {
		t.Fatalf("merged %+v, %v", got, err)
	}
	for _, bad := range []string{"", "host x", "peer " + string(make([]byte, maxStrikeKey))} {
		if _, err := s.PutClientStrike(bad, ClientStrike{Strikes: 1}); err == nil {
			t.Fatalf("key %.20q stored", bad)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x, err := s.ClientStrikes()
	if err != nil || len(x) != 2 || x["peer 12D3KooWA"] != (ClientStrike{2, 19}) || x["ip 198.51.100.7"] != (ClientStrike{1, 7}) {
		t.Fatalf("after reopen: %+v, %v", x, err)
	}
	// Full: a new key drops the record with the lowest until.
	err = s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketClientStrikes)
		for i := len(x); i < MaxClientStrikes; i++ {
			if err := bk.Put(fmt.Appendf(nil, "ip 10.0.%d.%d", i>>8, i&0xff), ClientStrike{Strikes: 1, Until: uint64(100 + i)}.encode()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutClientStrike("ip 203.0.113.9", ClientStrike{Strikes: 1, Until: 50}); err != nil {
		t.Fatal(err)
	}
	x, err = s.ClientStrikes()
	if err != nil || len(x) != MaxClientStrikes {
		t.Fatalf("%d records, %v; want %d", len(x), err, MaxClientStrikes)
	}
	if _, ok := x["ip 198.51.100.7"]; ok {
		t.Fatal("the record with the lowest until was kept")
	}
	if x["ip 203.0.113.9"].Until != 50 || x["peer 12D3KooWA"].Until != 19 {
		t.Fatalf("new or other records lost: %+v %+v", x["ip 203.0.113.9"], x["peer 12D3KooWA"])
	}
}
