package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestSegmentTornTail: bytes past a segment's committed end (an append
// torn by a crash, or left by a transaction that failed) and a segment
// file that no commit refers to are never read, are cut off or removed by
// Open, and do not disturb later writes.
func TestSegmentTornTail(t *testing.T) {
	r := testRand(31)
	path := filepath.Join(t.TempDir(), "torn.db")
	s, err := Open(path, Options{QuotaBytes: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	a := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 1000)}
	if err := s.PutRound(RoundRecord{Round: 1, Time: time.Now(), Published: ids(a)}, a, nil); err != nil {
		t.Fatal(err)
	}
	// A failed transaction: its first chunk is appended, its second passes
	// the quota.
	big := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 3<<20)}
	if err := s.PutChunks(big); !errors.Is(err, ErrQuota) {
		t.Fatalf("over quota: %v", err)
	}
	s.Close()
	seg0 := filepath.Join(path+segDirSuffix, segName(0))
	committed := int64(256<<10 + 1000)
	if st, _ := os.Stat(seg0); st.Size() <= committed {
		t.Fatalf("the failed put left no tail (%d bytes): the test proves nothing", st.Size())
	}
	// A torn append on top, and an orphan segment.
	f, err := os.OpenFile(seg0, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(strings.Repeat("torn", 3000)))
	f.Close()
	orphan := filepath.Join(path+segDirSuffix, segName(1))
	if err := os.WriteFile(orphan, []byte("uncommitted"), 0o600); err != nil {
		t.Fatal(err)
	}
	verifyStore(t, path)

	s, err = Open(path, Options{QuotaBytes: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(seg0); st.Size() != committed {
		t.Fatalf("segment 0 has %d bytes after Open, %d committed", st.Size(), committed)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphan segment kept: %v", err)
	}
	b := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 7)}
	if err := s.PutRound(RoundRecord{Round: 2, Time: time.Now(), Published: ids(b)}, b, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(a, b...) {
		got, err := s.GetChunk(c.ID)
		if err != nil || string(got) != string(c.Data) {
			t.Fatalf("chunk %x: %d bytes, %v", c.ID[:4], len(got), err)
		}
	}
	s.Close()
	if n := verifyStore(t, path); n != 4 {
		t.Fatalf("%d chunks, want 4", n)
	}

	// A segment shorter than its committed end has lost acknowledged
	// chunks: Open says so rather than serving them.
	if err := os.Truncate(seg0, committed-1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "committed") {
		t.Fatalf("Open of a cut segment: %v", err)
	}
}

// TestSegmentsRollAndGo: chunks fill segments up to segCap and roll to a
// new one; a segment whose chunks are all pruned is deleted unless it is
// the newest, and pruned space is punched out of the ones that stay.
func TestSegmentsRollAndGo(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 300 MiB")
	}
	r := testRand(32)
	s, path := openTest(t, Options{Retention: time.Hour})
	t0 := time.Now()
	var last []Chunk
	for i := 0; i < 75; i++ { // 75 × 4 MiB = 300 MiB: two segments
		c := []Chunk{mkChunk(r, MaxChunkSize)}
		if err := s.PutRound(RoundRecord{Round: uint32(i), Time: t0.Add(time.Duration(i) * time.Minute), Published: ids(c)}, c, nil); err != nil {
			t.Fatal(err)
		}
		last = c
	}
	dir := path + segDirSuffix
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Fatalf("%d segment files after 300 MiB, want 2", len(es))
	}
	// Prune everything but the newest round: segment 0 goes.
	if _, err := s.Prune(t0.Add(74*time.Minute - time.Second).Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, segName(0))); !os.IsNotExist(err) {
		t.Fatalf("segment 0 with no live chunk kept: %v", err)
	}
	if got, err := s.GetChunk(last[0].ID); err != nil || string(got) != string(last[0].Data) {
		t.Fatalf("newest chunk: %v", err)
	}
	s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSegments).Get(segKey(1))
		rec, _ := decodeSegRecord(v)
		if rec.live != MaxChunkSize || tx.Bucket(bucketSegments).Stats().KeyN != 1 {
			t.Errorf("segment 1 record %+v, %d records", rec, tx.Bucket(bucketSegments).Stats().KeyN)
		}
		return nil
	})
	// Ten of segment 1's eleven chunks were pruned: their blocks are
	// punched out (where the file system can).
	if used, ok := diskBytes(filepath.Join(dir, segName(1))); ok && used > 2*MaxChunkSize {
		t.Errorf("segment 1 takes %d bytes on disk for one live chunk of %d", used, MaxChunkSize)
	} else {
		t.Logf("segment 1: %d bytes on disk (%v)", used, ok)
	}
	s.Close()
	verifyStore(t, path)
}

// TestSchemaOneRefused: a database written with chunk bodies inside bbolt
// is refused with an error that says what to do, not misread.
func TestSchemaOneRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists(bucketMeta)
		return b.Put(metaSchema, binary.BigEndian.AppendUint32(nil, 1))
	})
	db.Close()
	_, err = Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "schema 1") || !strings.Contains(err.Error(), "move the file aside") {
		t.Fatalf("Open of a schema 1 file: %v", err)
	}
}

// TestCloseWaitsForViews: Close does not unmap the segments under a
// ViewChunks callback that is still reading them.
func TestCloseWaitsForViews(t *testing.T) {
	r := testRand(33)
	s, _ := openTest(t, Options{})
	c := mkChunk(r, 64<<10)
	if err := s.PutChunks([]Chunk{c}); err != nil {
		t.Fatal(err)
	}
	inside, closed := make(chan struct{}), make(chan struct{})
	go func() {
		<-inside
		s.Close()
		close(closed)
	}()
	err := s.ViewChunks([]ID{c.ID}, func(rows [][]byte) error {
		close(inside)
		time.Sleep(50 * time.Millisecond)
		select {
		case <-closed:
			t.Error("Close returned while a view was running")
		default:
		}
		if string(rows[0]) != string(c.Data) {
			t.Error("row changed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-closed
}
