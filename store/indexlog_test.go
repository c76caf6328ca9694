package store

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	bolt "go.etcd.io/bbolt"
)

// TestIndexLog (§7 v3): every manifest and entry indexed is logged
// in order; a page after a cursor holds the changes up to the budget (at
// least one), each page of the fixed wire budget fits the page cap, the
// chunks a prune removes are logged as removed, and a cursor past the
// log gets an empty page ending at the log's end.
func TestIndexLog(t *testing.T) {
	r := testRand(21)
	s, path := openTest(t, Options{Retention: time.Minute, IndexRetention: time.Minute})
	t0 := time.Unix(1_800_000_000, 0)
	// Five manifests of 3 MiB: two to a page of wire.IndexPageBytes.
	var cs []Chunk
	for range 5 {
		cs = append(cs, mkChunk(r, 3<<20))
	}
	if err := s.PutRound(RoundRecord{Time: t0, Published: ids(cs)}, cs, nil); err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		var idx []IndexEntry
		if i == 0 {
			idx = []IndexEntry{{FileID: c.ID, Name: "root", Time: t0}}
		}
		if err := s.PutManifests([]Manifest{{ID: c.ID, Round: uint32(i), Data: c.Data}}, idx); err != nil {
			t.Fatal(err)
		}
	}
	var got [][]byte
	cur, pages := uint64(0), 0
	for {
		ch, err := s.IndexSince(cur, wire.IndexPageBytes)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		page := wire.Index{Next: ch.Next, More: ch.More}
		for _, m := range ch.Manifests {
			page.Manifests = append(page.Manifests, m.Data)
			got = append(got, m.Data)
		}
		if n := len(page.Marshal()); n > wire.MaxIndexPage {
			t.Fatalf("page of %d bytes > %d", n, wire.MaxIndexPage)
		}
		if len(ch.Entries) == 1 && ch.Entries[0].Name != "root" {
			t.Fatalf("entry %+v", ch.Entries[0])
		}
		cur = ch.Next
		if !ch.More {
			break
		}
	}
	if pages != 3 || len(got) != 5 {
		t.Fatalf("%d manifests in %d pages, want 5 in 3", len(got), pages)
	}
	for i := range cs {
		if !bytes.Equal(got[i], cs[i].Data) {
			t.Fatalf("manifest %d out of order", i)
		}
	}
	// A budget below one manifest still moves on by one change.
	if ch, err := s.IndexSince(0, 1); err != nil || ch.Next == 0 || !ch.More || len(ch.Manifests) != 1 {
		t.Fatalf("budget 1: %+v, %v", ch, err)
	}
	// A cursor past the log.
	for _, c := range []uint64{cur + 1, math.MaxUint64} {
		if ch, err := s.IndexSince(c, wire.IndexPageBytes); err != nil || ch.Next != cur || ch.More || len(ch.Manifests)+len(ch.Entries)+len(ch.Removed) != 0 {
			t.Fatalf("cursor %d: %+v, %v", c, ch, err)
		}
	}
	// Pruned: five removals after the cursor, and nothing from before.
	if _, err := s.Prune(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ch, err := s.IndexSince(cur, wire.IndexPageBytes)
	if err != nil || len(ch.Removed) != 5 || len(ch.Manifests) != 0 || ch.More {
		t.Fatalf("after the prune: %+v, %v", ch, err)
	}
	if ch, err := s.IndexSince(0, wire.IndexPageBytes); err != nil || len(ch.Manifests) != 0 || len(ch.Removed) != 5 {
		t.Fatalf("from 0 after the prune: %d manifests, %d removed, %v", len(ch.Manifests), len(ch.Removed), err)
	}

	// A store written before the log: its index is logged once at open.
	c := mkChunk(r, 100)
	if err := s.PutRound(RoundRecord{Time: time.Now(), Published: ids([]Chunk{c})}, []Chunk{c}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutManifests([]Manifest{{ID: c.ID, Data: c.Data}}, nil); err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketIndexLog, bucketIndexSeq} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ch, err := s.IndexSince(0, wire.IndexPageBytes); err != nil || ch.Next != 1 || len(ch.Manifests) != 1 || ch.Manifests[0].ID != c.ID {
		t.Fatalf("backfilled log: %+v, %v", ch, err)
	}
}

// TestClientSyncedIndex: the client's synced copy, the time each id was
// first held and the cursors are stored page by page; removed ids leave
// the copy; ids held before a time expire; a manifest that does not hash
// to its id is refused.
func TestClientSyncedIndex(t *testing.T) {
	r := testRand(22)
	db, err := OpenClient(t.TempDir()+"/client.db", ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, b, c := mkChunk(r, 100), mkChunk(r, 200), mkChunk(r, 300)
	t0 := time.Unix(1_800_000_000, 0)
	srv := []byte("server-1")
	if n, err := db.IndexCursor(srv); err != nil || n != 0 {
		t.Fatalf("cursor before any sync: %d, %v", n, err)
	}
	if err := db.ApplyIndex(srv, 4, t0, []IndexEntry{{FileID: a.ID, Name: "a", Time: time.Unix(1, 0)}}, []Manifest{{ID: a.ID, Data: a.Data}, {ID: b.ID, Data: b.Data}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.ApplyIndex(srv, 5, t0.Add(time.Hour), nil, []Manifest{{ID: c.ID, Data: c.Data}, {ID: a.ID, Data: a.Data}}, []ID{b.ID}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.IndexCursor(srv); err != nil || n != 5 {
		t.Fatalf("cursor %d, %v", n, err)
	}
	if n, _ := db.IndexCursor([]byte("server-2")); n != 0 {
		t.Fatalf("another server's cursor %d", n)
	}
	entries, mans, seen, err := db.SyncedIndex()
	if err != nil || len(entries) != 1 || entries[0].Name != "a" || len(mans) != 2 || !bytes.Equal(mans[a.ID], a.Data) {
		t.Fatalf("copy %+v, %d manifests, %v", entries, len(mans), err)
	}
	if !seen[a.ID].Equal(t0) || !seen[c.ID].Equal(t0.Add(time.Hour)) || len(seen) != 2 {
		t.Fatalf("first held %v", seen)
	}
	if err := db.ApplyIndex(srv, 6, t0, nil, []Manifest{{ID: a.ID, Data: b.Data}}, nil); err == nil {
		t.Fatal("a manifest under another id was stored")
	}
	if n, _ := db.IndexCursor(srv); n != 5 {
		t.Fatalf("a refused page moved the cursor to %d", n)
	}
	dead, err := db.ExpireIndex(t0.Add(time.Minute))
	if err != nil || len(dead) != 1 || dead[0] != a.ID {
		t.Fatalf("expired %v, %v", dead, err)
	}
	entries, mans, _, _ = db.SyncedIndex()
	if len(entries) != 0 || len(mans) != 1 || mans[c.ID] == nil {
		t.Fatalf("after the expiry: %d entries, %d manifests", len(entries), len(mans))
	}
}

// TestIndexRetention (§7 v3): the index's retention is its own (a
// group constant the node passes on), not the operator's chunk retention:
// with chunk retention only, a prune drops data chunks and keeps every
// indexed manifest with its chunk; with index retention, the manifests
// indexed before it leave, logged as removed, and their chunks go with
// the next chunk prune; a remove record leaves after one index retention.
func TestIndexRetention(t *testing.T) {
	r := testRand(23)
	t0 := time.Unix(1_800_000_000, 0)
	for _, idxRet := range []time.Duration{0, time.Minute} {
		s, _ := openTest(t, Options{Retention: time.Minute, IndexRetention: idxRet})
		man, data := mkChunk(r, 500), mkChunk(r, 600)
		if err := s.PutRound(RoundRecord{Time: t0, Published: ids([]Chunk{man, data})}, []Chunk{man, data}, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.PutManifests([]Manifest{{ID: man.ID, Data: man.Data}}, []IndexEntry{{FileID: man.ID, Name: "m", Time: t0}}); err != nil {
			t.Fatal(err)
		}
		end, _ := s.IndexLogEnd()
		if _, err := s.Prune(t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		hasData, _ := s.HasChunk(data.ID)
		hasMan, _ := s.HasChunk(man.ID)
		_, indexed, _ := s.IndexEntry(man.ID)
		n := 0
		s.Manifests(func(Manifest) error { n++; return nil })
		ch, err := s.IndexSince(end, wire.IndexPageBytes)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case hasData:
			t.Fatalf("index retention %v: the data chunk outlived the chunk retention", idxRet)
		case idxRet == 0 && (!hasMan || !indexed || n != 1 || len(ch.Removed) != 0):
			t.Fatalf("chunk retention only: manifest chunk %v, entry %v, %d manifests, %d removed", hasMan, indexed, n, len(ch.Removed))
		case idxRet > 0 && (hasMan || indexed || n != 0 || len(ch.Removed) != 1 || ch.Removed[0] != man.ID):
			t.Fatalf("index retention: manifest chunk %v, entry %v, %d manifests, removed %v", hasMan, indexed, n, ch.Removed)
		}
		if idxRet > 0 {
			// A remove record lives for one index retention: the log
			// does not grow with every manifest that ever left.
			if _, err := s.Prune(t0.Add(time.Hour + 2*idxRet)); err != nil {
				t.Fatal(err)
			}
			if ch, err := s.IndexSince(0, wire.IndexPageBytes); err != nil || len(ch.Removed)+len(ch.Manifests) != 0 {
				t.Fatalf("old remove records kept: %+v, %v", ch, err)
			}
		}
	}
}
