package store

import (
	"errors"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	bolt "go.etcd.io/bbolt"
)

// syncModel is a client's synced copy as node/client keeps it (indexsync.go): a
// cursor in one server's log, and when each id was first held. It applies
// a removal only once the id was held for the retention less a tenth, and
// drops by itself what it held for the retention and a tenth.
type syncModel struct {
	cursor   uint64
	held     map[ID]time.Time
	closings map[string]bool
}

func (c *syncModel) sync(t *testing.T, s *Store, now time.Time, ret time.Duration) {
	t.Helper()
	if c.held == nil {
		c.held, c.closings = map[ID]time.Time{}, map[string]bool{}
	}
	for {
		ch, err := s.IndexSince(c.cursor, wire.IndexPageBytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ch.Removed {
			if h, ok := c.held[id]; ok && now.Sub(h) >= ret-ret/10 {
				delete(c.held, id)
			}
		}
		for _, m := range ch.Manifests {
			if _, ok := c.held[m.ID]; !ok {
				c.held[m.ID] = now
			}
		}
		for _, b := range ch.Closings {
			c.closings[string(b)] = true
		}
		c.cursor = ch.Next
		if !ch.More {
			break
		}
	}
	for id, h := range c.held {
		if h.Before(now.Add(-(ret + ret/10))) {
			delete(c.held, id)
		}
	}
}

// sameAsServer fails unless the copy holds exactly the server's manifests.
func (c *syncModel) sameAsServer(t *testing.T, s *Store, who string) {
	t.Helper()
	live := map[ID]bool{}
	if err := s.Manifests(func(m Manifest) error { live[m.ID] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for id := range c.held {
		if !live[id] {
			t.Errorf("%s: the copy holds %x, which the server removed", who, id[:6])
		}
	}
	for id := range live {
		if _, ok := c.held[id]; !ok {
			t.Errorf("%s: the copy lacks %x", who, id[:6])
		}
	}
}

// TestIndexCompaction (§7 v3; proto-store.md "Index log"): the index log
// is compacted without leaving any cursor's view wrong. A remove record
// stays for the retention and a tenth (removalKept), so a client that
// first held an id shortly before its removal and syncs a retention later
// still applies it (it kept the id, a removal the log had dropped after
// one retention); a client whose cursor predates a compacted removal has
// held the id long enough to drop it by itself. Closing records kept
// more than one retention ago leave the log and the closing bucket (the
// log kept one per epoch for good).
func TestIndexCompaction(t *testing.T) {
	const ret = time.Hour
	r := testRand(24)
	s, _ := openTest(t, Options{IndexRetention: ret})
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	s.clock = func() time.Time { return now }
	var cs []Chunk
	for range 3 {
		cs = append(cs, mkChunk(r, 1000))
	}
	if err := s.PutRound(RoundRecord{Time: t0, Published: ids(cs)}, cs, nil); err != nil {
		t.Fatal(err)
	}
	var mans []Manifest
	for _, c := range cs {
		mans = append(mans, Manifest{ID: c.ID, Data: c.Data})
	}
	if err := s.PutManifests(mans, nil); err != nil {
		t.Fatal(err)
	}
	old := EpochID{1}
	if err := s.PutClosing(old, []byte("closing of an old epoch")); err != nil {
		t.Fatal(err)
	}

	var early, late syncModel
	now = t0.Add(time.Minute)
	early.sync(t, s, now, ret)
	now = t0.Add(ret - ret/100)
	late.sync(t, s, now, ret)
	early.sameAsServer(t, s, "early client, before the removal")

	// The retention removes the three manifests at rm.
	rm := t0.Add(ret + time.Minute)
	now = rm
	if _, err := s.Prune(now); err != nil {
		t.Fatal(err)
	}
	now = rm.Add(ret / 2)
	recent := EpochID{2}
	if err := s.PutClosing(recent, []byte("closing of a recent epoch")); err != nil {
		t.Fatal(err)
	}

	// One retention and a twentieth after the removal: the late client
	// held the ids for less than the retention and a tenth, so it needs
	// the remove records.
	now = rm.Add(ret + ret/20)
	if _, err := s.Prune(now); err != nil {
		t.Fatal(err)
	}
	late.sync(t, s, now, ret)
	late.sameAsServer(t, s, "late client, a retention after the removal")
	if _, err := s.Closing(old); !errors.Is(err, ErrNotFound) {
		t.Errorf("a closing record kept %v ago is still kept: %v", now.Sub(t0), err)
	}
	if _, err := s.Closing(recent); err != nil {
		t.Errorf("a closing record kept %v ago: %v", now.Sub(rm.Add(ret/2)), err)
	}

	// Past the retention and a tenth the remove records are gone; the
	// early client, whose cursor predates them, drops the ids by itself.
	now = rm.Add(ret + ret/10 + time.Minute)
	if _, err := s.Prune(now); err != nil {
		t.Fatal(err)
	}
	early.sync(t, s, now, ret)
	early.sameAsServer(t, s, "early client, its cursor before the compacted removals")
	if !early.closings["closing of a recent epoch"] {
		t.Error("the early client missed the recent closing record")
	}
	ch, err := s.IndexSince(0, wire.IndexPageBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("log from 0 after compaction: %d removed, %d manifests, %d closings", len(ch.Removed), len(ch.Manifests), len(ch.Closings))
	if len(ch.Removed)+len(ch.Manifests) != 0 || len(ch.Closings) != 1 {
		t.Errorf("the compacted log holds %d removals, %d manifests, %d closings; want the recent closing only", len(ch.Removed), len(ch.Manifests), len(ch.Closings))
	}
	// A new client from 0 gets the same view.
	var fresh syncModel
	fresh.sync(t, s, now, ret)
	fresh.sameAsServer(t, s, "new client")
}

// TestClosingsBounded: with one epoch closed every tenth of a retention and
// a prune after each, the log holds about ten closing records, not one
// per epoch ever; a store whose closing records were kept before their
// age was starts their retention when it opens.
func TestClosingsBounded(t *testing.T) {
	const ret = time.Hour
	s, path := openTest(t, Options{IndexRetention: ret})
	now := time.Unix(1_800_000_000, 0)
	s.clock = func() time.Time { return now }
	const epochs = 200
	for i := range epochs {
		now = now.Add(ret / 10)
		if err := s.PutClosing(EpochID{byte(i), byte(i >> 8), 1}, []byte("closing")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prune(now); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := s.IndexSince(0, wire.IndexPageBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d epochs closed, one every %v: %d closing records in the log", epochs, ret/10, len(ch.Closings))
	if len(ch.Closings) > 11 {
		t.Fatalf("%d closing records kept after %d epochs", len(ch.Closings), epochs)
	}

	// Kept before closing-age existed: its age is backfilled at open.
	ep := EpochID{9, 9, 9}
	if err := s.PutClosing(ep, []byte("from an older version")); err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketClosingAge); err != nil {
			return err
		}
		_, err := tx.CreateBucket(bucketClosingAge)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, Options{IndexRetention: ret})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Prune(time.Now().Add(ret / 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Closing(ep); err != nil {
		t.Fatalf("a backfilled closing record left before its retention: %v", err)
	}
	if _, err := s.Prune(time.Now().Add(2 * ret)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Closing(ep); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a backfilled closing record outlived its retention: %v", err)
	}
}
