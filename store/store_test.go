package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// TestMain lets the test binary act as a child process for the crash and
// lock tests (see childMain in crash_test.go).
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

// testRand is a deterministic source so that failures reproduce.
func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func mkChunk(r *rand.Rand, size int) Chunk {
	data := make([]byte, size)
	for i := 0; i+8 <= size; i += 8 {
		binary.LittleEndian.PutUint64(data[i:], r.Uint64())
	}
	for i := size &^ 7; i < size; i++ {
		data[i] = byte(r.Uint32())
	}
	return Chunk{ID: sha256.Sum256(data), Data: data}
}

func openTest(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func ids(cs []Chunk) []ID {
	out := make([]ID, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	r := testRand(1)
	s, path := openTest(t, Options{})
	epoch := EpochID{1, 2, 3}
	chunks := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 1000), mkChunk(r, 0), mkChunk(r, 256<<10)}
	when := time.Unix(1_700_000_000, 123).UTC()
	idx := IndexEntry{FileID: chunks[1].ID, Name: "été.txt", Size: 300 << 10, Chunks: 2, Epoch: epoch, Round: 7, Time: when}
	rec := RoundRecord{Epoch: epoch, Round: 7, Time: when, Published: ids(chunks),
		Requests: []Request{{chunks[0].ID, 256 << 10}, {chunks[2].ID, 0}}}
	if err := s.PutRound(rec, chunks, []IndexEntry{idx}); err != nil {
		t.Fatal(err)
	}
	want := int64(2*(256<<10) + 1000)
	if s.Usage() != want {
		t.Fatalf("usage %d, want %d", s.Usage(), want)
	}
	// Again, identical: a no-op that charges nothing.
	if err := s.PutRound(rec, chunks, []IndexEntry{idx}); err != nil {
		t.Fatalf("identical round again: %v", err)
	}
	if s.Usage() != want {
		t.Fatalf("usage after re-put %d, want %d", s.Usage(), want)
	}
	// A different record for the same round is a conflict.
	other := rec
	other.Published = other.Published[:1]
	if err := s.PutRound(other, nil, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("conflicting round: %v", err)
	}
	// A later index entry for the same file keeps the first publication.
	later := idx
	later.Round, later.Name = 9, "other"
	rec9 := RoundRecord{Epoch: epoch, Round: 9, Time: when.Add(time.Minute), Published: []ID{chunks[1].ID}}
	if err := s.PutRound(rec9, nil, []IndexEntry{later}); err != nil {
		t.Fatal(err)
	}

	check := func(s *Store) {
		t.Helper()
		for _, c := range chunks {
			got, err := s.GetChunk(c.ID)
			if err != nil || !bytes.Equal(got, c.Data) {
				t.Fatalf("chunk %x: %d bytes, %v", c.ID[:4], len(got), err)
			}
			if ok, err := s.HasChunk(c.ID); !ok || err != nil {
				t.Fatalf("HasChunk %x: %v %v", c.ID[:4], ok, err)
			}
		}
		got, err := s.Round(epoch, 7)
		if err != nil {
			t.Fatal(err)
		}
		if !equalRound(got, rec) {
			t.Fatalf("round: got %+v, want %+v", got, rec)
		}
		e, ok, err := s.IndexEntry(idx.FileID)
		if err != nil || !ok || e != idx {
			t.Fatalf("index entry: %+v %v %v, want %+v", e, ok, err, idx)
		}
		var n int
		if err := s.Index(func(e IndexEntry) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("index walk: %d entries, %v", n, err)
		}
	}
	check(s)
	s.Close()
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	check(s2)
	if s2.Usage() != want {
		t.Fatalf("usage after reopen %d, want %d", s2.Usage(), want)
	}
	if _, err := s2.GetChunk(ID{9}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing chunk: %v", err)
	}
	if _, err := s2.Round(epoch, 8); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing round: %v", err)
	}
}

func equalRound(a, b RoundRecord) bool {
	return bytes.Equal(a.encode(), b.encode()) && a.Time.Equal(b.Time)
}

func TestPutRoundValidation(t *testing.T) {
	r := testRand(2)
	s, _ := openTest(t, Options{})
	c := mkChunk(r, 100)
	now := time.Now()
	bad := c
	bad.Data = append([]byte{1}, c.Data[1:]...)
	cases := map[string]struct {
		rec    RoundRecord
		chunks []Chunk
		index  []IndexEntry
		want   error
	}{
		"hash mismatch":       {RoundRecord{Time: now, Published: []ID{c.ID}}, []Chunk{bad}, nil, ErrBadChunk},
		"published not given": {RoundRecord{Time: now, Published: []ID{c.ID}}, nil, nil, ErrNotFound},
		"index not given":     {RoundRecord{Time: now}, nil, []IndexEntry{{FileID: c.ID}}, ErrNotFound},
		"request not stored":  {RoundRecord{Time: now, Requests: []Request{{c.ID, 100}}}, nil, nil, ErrNotFound},
		"request length":      {RoundRecord{Time: now, Requests: []Request{{c.ID, 99}}}, []Chunk{c}, nil, nil},
	}
	for name, tc := range cases {
		err := s.PutRound(tc.rec, tc.chunks, tc.index)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
	if s.Usage() != 0 {
		t.Fatalf("failed puts left %d bytes charged", s.Usage())
	}
	if ok, _ := s.HasChunk(c.ID); ok {
		t.Fatal("a failed put left its chunk behind")
	}
	if err := s.PutRound(RoundRecord{Round: 1}, nil, nil); err == nil {
		t.Fatal("round without a time accepted")
	}
	if err := s.PutChunks([]Chunk{{ID: sha256.Sum256(make([]byte, MaxChunkSize+1)), Data: make([]byte, MaxChunkSize+1)}}); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("oversized chunk: %v", err)
	}
}

// TestPutRoundHashed: the caller-hashed path skips only the hash; sizes
// and the round's own checks still hold, and what it stores reads back.
func TestPutRoundHashed(t *testing.T) {
	r := testRand(9)
	s, _ := openTest(t, Options{})
	c := mkChunk(r, 300)
	now := time.Now()
	big := Chunk{ID: ID{1}, Data: make([]byte, MaxChunkSize+1)}
	if err := s.PutRoundHashed(RoundRecord{Time: now, Published: []ID{big.ID}}, []Chunk{big}, nil); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("oversized chunk: %v", err)
	}
	if err := s.PutRoundHashed(RoundRecord{Round: 1}, nil, nil); err == nil {
		t.Fatal("round without a time accepted")
	}
	if err := s.PutRoundHashed(RoundRecord{Time: now, Published: []ID{c.ID}}, []Chunk{c}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetChunk(c.ID)
	if err != nil || !bytes.Equal(got, c.Data) {
		t.Fatalf("read back: %v", err)
	}
	held, err := s.HeldRequests([]ID{{9}, c.ID})
	if err != nil || len(held) != 1 || held[0] != (Request{c.ID, 300}) {
		t.Fatalf("HeldRequests = %v, %v", held, err)
	}
}

func TestPutRequestsLater(t *testing.T) {
	r := testRand(3)
	s, _ := openTest(t, Options{})
	cs := []Chunk{mkChunk(r, 5000), mkChunk(r, 7000)}
	ep := EpochID{7}
	if err := s.PutRound(RoundRecord{Epoch: ep, Round: 0, Time: time.Now(), Published: ids(cs)}, cs, nil); err != nil {
		t.Fatal(err)
	}
	reqs := []Request{{cs[1].ID, 7000}, {cs[0].ID, 5000}}
	if err := s.PutRequests(ep, 0, reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRequests(ep, 0, reqs); err != nil {
		t.Fatalf("same list again: %v", err)
	}
	if err := s.PutRequests(ep, 0, reqs[:1]); !errors.Is(err, ErrConflict) {
		t.Fatalf("different list: %v", err)
	}
	if err := s.PutRequests(ep, 1, reqs); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown round: %v", err)
	}
	got, err := s.Round(ep, 0)
	if err != nil || !equalRequests(got.Requests, reqs) {
		t.Fatalf("requests %v, %v", got.Requests, err)
	}
}

func TestViewChunksZeroCopy(t *testing.T) {
	r := testRand(4)
	s, _ := openTest(t, Options{})
	cs := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 4096), mkChunk(r, 256<<10)}
	if err := s.PutChunks(cs); err != nil {
		t.Fatal(err)
	}
	order := []ID{cs[2].ID, cs[0].ID, cs[2].ID, cs[1].ID}
	var first []uintptr
	for pass := 0; pass < 2; pass++ {
		err := s.ViewChunks(order, func(rows [][]byte) error {
			for i, row := range rows {
				want := cs[[]int{2, 0, 2, 1}[i]].Data
				if !bytes.Equal(row, want) {
					return fmt.Errorf("row %d differs", i)
				}
				if cap(row) != len(row) {
					return fmt.Errorf("row %d has spare capacity %d", i, cap(row)-len(row))
				}
				p := uintptr(unsafe.Pointer(unsafe.SliceData(row)))
				if pass == 0 {
					first = append(first, p)
				} else if first[i] != p {
					return fmt.Errorf("row %d moved between transactions: a copy, not the map", i)
				}
			}
			if &rows[0][0] != &rows[2][0] {
				return errors.New("one chunk listed twice gave two copies")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ViewChunks([]ID{cs[0].ID, {1}}, func([][]byte) error {
		t.Fatal("fn called despite a missing row")
		return nil
	}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing row: %v", err)
	}
}

func TestQuota(t *testing.T) {
	r := testRand(5)
	const quota = 1 << 20
	s, path := openTest(t, Options{QuotaBytes: quota})
	a := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 256<<10), mkChunk(r, 256<<10)}
	if err := s.PutChunks(a); err != nil {
		t.Fatal(err)
	}
	// Existing chunks do not count twice: putting them again fits, and a
	// chunk twice in one batch is charged once.
	if err := s.PutChunks(a); err != nil {
		t.Fatalf("re-put of stored chunks: %v", err)
	}
	tiny := mkChunk(r, 1)
	if err := s.PutChunks([]Chunk{tiny, tiny}); err != nil || s.Usage() != 3*(256<<10)+1 {
		t.Fatalf("duplicate in a batch: usage %d, %v", s.Usage(), err)
	}
	held, err := s.HeldRequests([]ID{a[2].ID, {7}, tiny.ID})
	if err != nil || len(held) != 2 || held[0] != (Request{a[2].ID, 256 << 10}) || held[1] != (Request{tiny.ID, 1}) {
		t.Fatalf("held requests %v, %v", held, err)
	}
	// 256 KiB more fits exactly, but a round with two new chunks does not,
	// and none of it is written.
	b := []Chunk{mkChunk(r, 256<<10-1), mkChunk(r, 10)}
	err = s.PutRound(RoundRecord{Epoch: EpochID{1}, Time: time.Now(), Published: ids(b)}, b, nil)
	if !errors.Is(err, ErrQuota) {
		t.Fatalf("over quota: %v", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(quota)) {
		t.Fatalf("quota error does not name the quota: %v", err)
	}
	for _, c := range b {
		if ok, _ := s.HasChunk(c.ID); ok {
			t.Fatal("half-written round: a chunk of the refused put is stored")
		}
	}
	if _, err := s.Round(EpochID{1}, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused round's record: %v", err)
	}
	if s.Usage() != 3*(256<<10)+1 {
		t.Fatalf("usage %d after refused put", s.Usage())
	}
	if err := s.PutChunks(b[:1]); err != nil {
		t.Fatalf("exact fit: %v", err)
	}
	if s.Usage() != quota {
		t.Fatalf("usage %d, want %d", s.Usage(), quota)
	}
	// The counter survives a reopen.
	s.Close()
	s2, err := Open(path, Options{QuotaBytes: quota})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Usage() != quota {
		t.Fatalf("usage after reopen %d", s2.Usage())
	}
	if err := s2.PutChunks(b[1:]); !errors.Is(err, ErrQuota) {
		t.Fatalf("over quota after reopen: %v", err)
	}
}

func TestRetention(t *testing.T) {
	r := testRand(6)
	s, _ := openTest(t, Options{Retention: time.Hour, IndexRetention: time.Hour})
	t0 := time.Unix(1_800_000_000, 0)
	old := []Chunk{mkChunk(r, 3000), mkChunk(r, 4000)}
	fresh := []Chunk{mkChunk(r, 5000)}
	reused := mkChunk(r, 6000)
	ep := EpochID{4}
	if err := s.PutEpoch(EpochRecord{ID: ep, Number: 1, Started: t0, Ended: t0.Add(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEpoch(EpochRecord{ID: EpochID{5}, Number: 2, Started: t0.Add(90 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	put := func(round uint32, at time.Time, cs []Chunk, reqs []Request, idx []IndexEntry) {
		t.Helper()
		rec := RoundRecord{Epoch: ep, Round: round, Time: at, Published: ids(cs), Requests: reqs}
		if err := s.PutRound(rec, cs, idx); err != nil {
			t.Fatal(err)
		}
	}
	put(0, t0, append(old, reused), nil, []IndexEntry{{FileID: old[0].ID, Name: "old", Time: t0}})
	// The reused chunk is listed in a later request list: its clock restarts.
	put(1, t0.Add(50*time.Minute), fresh, []Request{{reused.ID, 6000}}, []IndexEntry{{FileID: fresh[0].ID, Name: "fresh"}})

	if n, err := s.Prune(t0.Add(59 * time.Minute)); err != nil || n != 0 {
		t.Fatalf("early prune removed %d, %v", n, err)
	}
	n, err := s.Prune(t0.Add(61 * time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("prune removed %d chunks, %v; want 2", n, err)
	}
	for _, c := range old {
		if ok, _ := s.HasChunk(c.ID); ok {
			t.Fatalf("expired chunk %x kept", c.ID[:4])
		}
	}
	for _, c := range append(fresh, reused) {
		if _, err := s.GetChunk(c.ID); err != nil {
			t.Fatalf("live chunk %x: %v", c.ID[:4], err)
		}
	}
	if _, ok, _ := s.IndexEntry(old[0].ID); ok {
		t.Fatal("index entry of a pruned manifest kept")
	}
	if _, ok, _ := s.IndexEntry(fresh[0].ID); !ok {
		t.Fatal("live index entry pruned")
	}
	if _, err := s.Round(ep, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired round record: %v", err)
	}
	if _, err := s.Round(ep, 1); err != nil {
		t.Fatalf("live round record: %v", err)
	}
	if _, err := s.Epoch(ep); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired epoch: %v", err)
	}
	if _, err := s.Epoch(EpochID{5}); err != nil {
		t.Fatalf("live epoch: %v", err)
	}
	if s.Usage() != 5000+6000 {
		t.Fatalf("usage %d after prune", s.Usage())
	}
	if n, err := s.Prune(t0.Add(200 * time.Minute)); err != nil || n != 2 || s.Usage() != 0 {
		t.Fatalf("final prune: %d, %v, usage %d", n, err, s.Usage())
	}
}

func TestPruneBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("writes more than pruneBatch chunks")
	}
	r := testRand(7)
	s, path := openTest(t, Options{Retention: time.Minute})
	t0 := time.Unix(1_800_000_000, 0)
	var cs []Chunk
	for i := 0; i < pruneBatch+10; i++ {
		cs = append(cs, mkChunk(r, 64))
	}
	if err := s.PutRound(RoundRecord{Time: t0, Published: ids(cs)}, cs, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Prune(t0.Add(time.Hour)); err != nil || n != len(cs) {
		t.Fatalf("pruned %d of %d: %v", n, len(cs), err)
	}
	s.Close()
	verifyStore(t, path)
}

func TestEpochs(t *testing.T) {
	s, _ := openTest(t, Options{})
	t0 := time.Unix(1_800_000_000, 5).UTC()
	recs := []EpochRecord{
		{ID: EpochID{9}, Number: 2, Started: t0, Descriptor: []byte("descriptor two")},
		{ID: EpochID{3}, Number: 1, Started: t0, Ended: t0.Add(time.Hour), Rounds: 256, EndReason: "R rounds"},
		{ID: EpochID{1}, Number: 2, Started: t0.Add(time.Second), EndReason: "retried setup"},
	}
	for _, e := range recs {
		if err := s.PutEpoch(e); err != nil {
			t.Fatal(err)
		}
	}
	// Ending an epoch replaces its record.
	recs[0].Ended, recs[0].Rounds, recs[0].EndReason = t0.Add(time.Hour), 12, "server left"
	if err := s.PutEpoch(recs[0]); err != nil {
		t.Fatal(err)
	}
	moved := recs[0]
	moved.Number = 5
	if err := s.PutEpoch(moved); !errors.Is(err, ErrConflict) {
		t.Fatalf("same id, other number: %v", err)
	}
	var got []EpochRecord
	if err := s.Epochs(0, func(e EpochRecord) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []EpochRecord{recs[1], recs[2], recs[0]} // by number, then id
	if len(got) != len(want) {
		t.Fatalf("%d epochs, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].encode(), want[i].encode()) {
			t.Fatalf("epoch %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	got = got[:0]
	if err := s.Epochs(2, func(e EpochRecord) error { got = append(got, e); return nil }); err != nil || len(got) != 2 {
		t.Fatalf("epochs from 2: %d, %v", len(got), err)
	}
	e, err := s.Epoch(EpochID{9})
	if err != nil || e.EndReason != "server left" {
		t.Fatalf("epoch by id: %+v %v", e, err)
	}
}

// TestConcurrentReaders runs readers (GetChunk, ViewChunks, Index) while a
// writer commits rounds and prunes; readers must always see whole chunks
// that hash to their ids.
func TestConcurrentReaders(t *testing.T) {
	r := testRand(8)
	s, path := openTest(t, Options{Retention: time.Hour})
	base := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 256<<10)}
	if err := s.PutChunks(base); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var latest atomic.Pointer[ID] // a chunk of an early round, soon pruned
	errs := make(chan error, 8)
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				err := s.ViewChunks(ids(base), func(rows [][]byte) error {
					for i, row := range rows {
						if sha256.Sum256(row) != base[i].ID {
							return fmt.Errorf("row %d torn", i)
						}
					}
					return nil
				})
				if p := latest.Load(); err == nil && p != nil {
					// A chunk that prunes delete meanwhile: its bytes stay
					// whole while viewed (its space is given back after).
					err = s.ViewChunks([]ID{*p}, func(rows [][]byte) error {
						time.Sleep(time.Millisecond)
						if sha256.Sum256(rows[0]) != *p {
							return fmt.Errorf("viewed chunk %x changed under its reader", p[:4])
						}
						return nil
					})
					if errors.Is(err, ErrNotFound) {
						err = nil
					}
				}
				if err == nil {
					// One snapshot: every indexed file's manifest is there.
					err = s.db.View(func(tx *bolt.Tx) error {
						return tx.Bucket(bucketIndex).ForEach(func(k, _ []byte) error {
							if tx.Bucket(bucketChunks).Get(k) == nil {
								return fmt.Errorf("indexed file %x has no manifest", k[:4])
							}
							return nil
						})
					})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	t0 := time.Now()
	rounds := 40
	if testing.Short() {
		rounds = 15
	}
	for i := 0; i < rounds; i++ {
		cs := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 1+r.IntN(256<<10))}
		at := t0.Add(time.Duration(i) * time.Minute)
		rec := RoundRecord{Epoch: EpochID{2}, Round: uint32(i), Time: at, Published: ids(cs),
			Requests: []Request{{base[0].ID, 256 << 10}, {base[1].ID, 256 << 10}}}
		if err := s.PutRound(rec, cs, []IndexEntry{{FileID: cs[1].ID, Name: fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
		latest.Store(&cs[0].ID)
		if i%5 == 4 {
			if _, err := s.Prune(at.Add(-5 * time.Minute).Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.Close()
	verifyStore(t, path)
}

// verifyStore opens the database at path with bbolt directly and checks
// every invariant: bbolt's own consistency check, every chunk hashes to
// its id and has its meta and age entries and nothing else does, the usage
// counter is the sum of the chunk lengths, every index entry's file is
// stored, and round records and round-age entries match. It returns the
// number of chunks.
func verifyStore(t *testing.T, path string) int {
	t.Helper()
	n, err := checkStore(path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func checkStore(path string) (n int, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		var problems []error
		for err := range tx.Check() {
			problems = append(problems, err)
		}
		if len(problems) > 0 {
			return fmt.Errorf("bbolt check: %w", errors.Join(problems...))
		}
		chunks, meta, age := tx.Bucket(bucketChunks), tx.Bucket(bucketChunkMeta), tx.Bucket(bucketChunkAge)
		var total int64
		segs := map[uint32]segRecord{}
		err := tx.Bucket(bucketSegments).ForEach(func(k, v []byte) error {
			r, err := decodeSegRecord(v)
			if err != nil {
				return err
			}
			st, err := os.Stat(filepath.Join(path+segDirSuffix, segName(binary.BigEndian.Uint32(k))))
			if err != nil || st.Size() < int64(r.end) {
				return fmt.Errorf("segment %x: committed end %d, file %v", k, r.end, err)
			}
			segs[binary.BigEndian.Uint32(k)] = segRecord{end: r.end}
			return nil
		})
		if err != nil {
			return err
		}
		var live = map[uint32]uint64{}
		err = chunks.ForEach(func(k, lv []byte) error {
			l, err := decodeChunkLoc(lv)
			if err != nil {
				return err
			}
			if r, ok := segs[l.seg]; !ok || l.off+uint64(l.length) > r.end {
				return fmt.Errorf("chunk %x at %+v: past its segment's committed end", k[:4], l)
			}
			live[l.seg] += uint64(l.length)
			v := make([]byte, l.length)
			f, err := os.Open(filepath.Join(path+segDirSuffix, segName(l.seg)))
			if err != nil {
				return err
			}
			_, err = f.ReadAt(v, int64(l.off))
			f.Close()
			if err != nil || sha256.Sum256(v) != ID(k) {
				return fmt.Errorf("chunk %x: %d bytes do not hash to its id (%v)", k[:4], len(v), err)
			}
			m, err := decodeChunkMeta(meta.Get(k))
			if err != nil {
				return fmt.Errorf("chunk %x meta: %w", k[:4], err)
			}
			if int(m.length) != len(v) || age.Get(ageKey(m.touched, k)) == nil {
				return fmt.Errorf("chunk %x: meta %+v, %d bytes, age entry missing", k[:4], m, len(v))
			}
			total += int64(len(v))
			n++
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketSegments).ForEach(func(k, v []byte) error {
			r, _ := decodeSegRecord(v)
			if n := binary.BigEndian.Uint32(k); r.live != live[n] {
				return fmt.Errorf("segment %d counts %d live bytes, its chunks hold %d", n, r.live, live[n])
			}
			return nil
		})
		if err != nil {
			return err
		}
		if meta.Stats().KeyN != n || age.Stats().KeyN != n {
			return fmt.Errorf("%d chunks, %d meta, %d age entries", n, meta.Stats().KeyN, age.Stats().KeyN)
		}
		usage, err := readUsage(tx.Bucket(bucketMeta))
		if err != nil || usage != total {
			return fmt.Errorf("usage counter %d, chunks hold %d (%v)", usage, total, err)
		}
		err = tx.Bucket(bucketIndex).ForEach(func(k, v []byte) error {
			e, err := decodeIndexEntry(v)
			if err != nil {
				return err
			}
			if !bytes.Equal(e.FileID[:], k) || chunks.Get(k) == nil {
				return fmt.Errorf("index entry %x points to absent data", k[:4])
			}
			return nil
		})
		if err != nil {
			return err
		}
		rounds := 0
		err = tx.Bucket(bucketRounds).ForEach(func(k, v []byte) error {
			rec, err := decodeRoundRecord(v)
			if err != nil {
				return err
			}
			if !bytes.Equal(roundKey(rec.Epoch, rec.Round), k) || tx.Bucket(bucketRoundAge).Get(ageKey(rec.Time, k)) == nil {
				return fmt.Errorf("round record %x misfiled or without age entry", k)
			}
			rounds++
			return nil
		})
		if err != nil {
			return err
		}
		if got := tx.Bucket(bucketRoundAge).Stats().KeyN; got != rounds {
			return fmt.Errorf("%d rounds, %d round-age entries", rounds, got)
		}
		return nil
	})
	return n, err
}

// TestCheckStoreCatches shows that the verifier used by the crash test
// finds a torn chunk, a dangling index entry and a wrong usage counter.
func TestCheckStoreCatches(t *testing.T) {
	r := testRand(10)
	cs := []Chunk{mkChunk(r, 9000), mkChunk(r, 10)}
	for name, damage := range map[string]func(tx *bolt.Tx) error{
		"torn chunk": func(tx *bolt.Tx) error {
			l, _ := decodeChunkLoc(tx.Bucket(bucketChunks).Get(cs[0].ID[:]))
			l.length = 4096
			return tx.Bucket(bucketChunks).Put(cs[0].ID[:], l.encode())
		},
		"chunk past the segment end": func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSegments).Put(segKey(0), segRecord{end: 100, live: 100}.encode())
		},
		"dangling index": func(tx *bolt.Tx) error {
			return tx.Bucket(bucketIndex).Put(cs[1].ID[:], (&IndexEntry{FileID: cs[1].ID}).encode())
		},
		"usage": func(tx *bolt.Tx) error { return writeUsage(tx.Bucket(bucketMeta), 1) },
	} {
		path := filepath.Join(t.TempDir(), "v.db")
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PutChunks(cs[:1]); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := checkStore(path); err != nil {
			t.Fatalf("%s: intact store fails the check: %v", name, err)
		}
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(damage); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if _, err := checkStore(path); err == nil {
			t.Fatalf("%s: not caught", name)
		}
	}
}

func TestIndexNameCleaned(t *testing.T) {
	r := testRand(11)
	s, _ := openTest(t, Options{})
	long := strings.Repeat("é", MaxNameBytes) // 2 bytes a character
	cs := []Chunk{mkChunk(r, 10), mkChunk(r, 11)}
	idx := []IndexEntry{{FileID: cs[0].ID, Name: "a\xffb"}, {FileID: cs[1].ID, Name: long}}
	if err := s.PutRound(RoundRecord{Time: time.Now(), Published: ids(cs)}, cs, idx); err != nil {
		t.Fatalf("a round with bad names must still store: %v", err)
	}
	e, _, _ := s.IndexEntry(cs[0].ID)
	if e.Name != "a\uFFFDb" {
		t.Fatalf("invalid UTF-8 became %q", e.Name)
	}
	e, _, _ = s.IndexEntry(cs[1].ID)
	if len(e.Name) != MaxNameBytes || e.Name != long[:MaxNameBytes] {
		t.Fatalf("long name cut to %d bytes", len(e.Name))
	}
	if idx[0].Name != "a\xffb" {
		t.Fatal("PutRound modified the caller's slice")
	}
	if got := cleanName("ab" + strings.Repeat("€", MaxNameBytes)); len(got) > MaxNameBytes || !utf8.ValidString(got) {
		t.Fatalf("cut inside a character: %d bytes", len(got))
	}
}

// TestManifests (§6.4 v3): manifest chunks are indexed with their
// bytes once their chunk is stored, the first publication wins, a chunk
// whose bytes do not hash to its id or that is not stored is refused, and
// pruning the chunk drops its manifest record with its index entry.
func TestManifests(t *testing.T) {
	r := testRand(11)
	s, _ := openTest(t, Options{Retention: time.Minute, IndexRetention: time.Minute})
	t0 := time.Unix(1_800_000_000, 0)
	a, b := mkChunk(r, 100), mkChunk(r, 60)
	if err := s.PutRound(RoundRecord{Time: t0, Published: ids([]Chunk{a, b})}, []Chunk{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutManifests([]Manifest{{ID: a.ID, Round: 1, Pos: 2, Data: a.Data}}, []IndexEntry{{FileID: a.ID, Name: "f", Round: 1, Time: t0}}); err != nil {
		t.Fatal(err)
	}
	// Again from a later round: the first publication stays.
	if err := s.PutManifests([]Manifest{{ID: a.ID, Round: 9, Pos: 0, Data: a.Data}, {ID: b.ID, Round: 9, Data: b.Data}}, nil); err != nil {
		t.Fatal(err)
	}
	bad := mkChunk(r, 10)
	if err := s.PutManifests([]Manifest{{ID: bad.ID, Data: bad.Data}}, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a manifest never stored as a chunk: %v", err)
	}
	if err := s.PutManifests([]Manifest{{ID: a.ID, Data: b.Data}}, nil); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("bytes of another chunk: %v", err)
	}
	got := map[ID]Manifest{}
	if err := s.Manifests(func(m Manifest) error { got[m.ID] = m; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[a.ID].Round != 1 || got[a.ID].Pos != 2 || !bytes.Equal(got[a.ID].Data, a.Data) || !bytes.Equal(got[b.ID].Data, b.Data) {
		t.Fatalf("manifests %+v", got)
	}
	if _, ok, _ := s.IndexEntry(a.ID); !ok {
		t.Fatal("root not in the index")
	}
	if _, err := s.Prune(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.Manifests(func(Manifest) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d manifests after the prune: %v", n, err)
	}
	if _, ok, _ := s.IndexEntry(a.ID); ok {
		t.Fatal("index entry left after the prune")
	}
}
