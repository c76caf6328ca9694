package store

import (
	"errors"
	"testing"
	"time"
)

// TestPairsRoundTrip (§7 v3): a round's (position, id) pairs come
// back as stored, again after a reopen; the same pairs again are taken,
// other ones are a conflict; a round without pairs is not found; the
// retention prunes them with their round.
func TestPairsRoundTrip(t *testing.T) {
	s, path := openTest(t, Options{Retention: time.Minute})
	ep := EpochID{0xee}
	ps := []Pair{{Pos: 0, ID: ID{1}}, {Pos: 0, ID: ID{2}}, {Pos: 5, ID: ID{1}}}
	if _, err := s.Pairs(ep, 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pairs before any: %v", err)
	}
	if err := s.PutRound(RoundRecord{Epoch: ep, Round: 3, Time: time.Now().Add(-time.Hour)}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPairs(ep, 3, ps); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPairs(ep, 3, ps); err != nil {
		t.Fatalf("the same pairs again: %v", err)
	}
	if err := s.PutPairs(ep, 3, ps[:1]); !errors.Is(err, ErrConflict) {
		t.Fatalf("other pairs: %v", err)
	}
	s.Close()
	var got []Pair
	s, err := Open(path, Options{Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err = s.Pairs(ep, 3)
	if err != nil || len(got) != len(ps) {
		t.Fatalf("pairs %v, %v", got, err)
	}
	for i := range ps {
		if got[i] != ps[i] {
			t.Fatalf("pair %d: %v, want %v", i, got[i], ps[i])
		}
	}
	if _, err := decodePairs(encodePairs(ps)[:40]); err == nil {
		t.Fatal("a cut pairs record decodes")
	}
	if _, err := s.Prune(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pairs(ep, 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pairs after their round was pruned: %v", err)
	}
}

// TestClosingInIndexLog (§7 v3): an epoch's closing record is kept
// and logged once in the index log, and a page after a cursor before it
// carries it; the same record again adds nothing, another one of the
// epoch is a conflict.
func TestClosingInIndexLog(t *testing.T) {
	s, _ := openTest(t, Options{})
	ep := EpochID{0xee}
	rec := []byte("closing record bytes")
	before, _ := s.IndexLogEnd()
	if err := s.PutClosing(ep, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.PutClosing(ep, rec); err != nil {
		t.Fatalf("the same record again: %v", err)
	}
	if err := s.PutClosing(ep, []byte("another")); !errors.Is(err, ErrConflict) {
		t.Fatalf("another record: %v", err)
	}
	end, _ := s.IndexLogEnd()
	if end != before+1 {
		t.Fatalf("log grew by %d records, want 1", end-before)
	}
	ch, err := s.IndexSince(before, 1<<20)
	if err != nil || len(ch.Closings) != 1 || string(ch.Closings[0]) != string(rec) || ch.Next != end {
		t.Fatalf("page %+v, %v", ch, err)
	}
	if got, err := s.Closing(ep); err != nil || string(got) != string(rec) {
		t.Fatalf("closing %q, %v", got, err)
	}
	if ch, _ := s.IndexSince(end, 1<<20); len(ch.Closings) != 0 {
		t.Fatal("a page after the record carries it")
	}
}
