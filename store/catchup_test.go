package store

import (
	"errors"
	"testing"
	"time"
)

// TestListsAndCursors (§7 v3): a round's final list comes back as
// kept, again after a reopen; the same list again is taken, another one is
// a conflict; the retention prunes it with its round. A catch-up cursor
// is 0 until kept and survives a reopen.
func TestListsAndCursors(t *testing.T) {
	s, path := openTest(t, Options{Retention: time.Minute})
	ep := EpochID{0xee}
	list := []byte("signed list bytes")
	if _, err := s.List(ep, 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("list before any: %v", err)
	}
	if err := s.PutRound(RoundRecord{Epoch: ep, Round: 3, Time: time.Now().Add(-time.Hour)}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutList(ep, 3, list); err != nil {
		t.Fatal(err)
	}
	if err := s.PutList(ep, 3, list); err != nil {
		t.Fatalf("the same list again: %v", err)
	}
	if err := s.PutList(ep, 3, []byte("other")); !errors.Is(err, ErrConflict) {
		t.Fatalf("another list: %v", err)
	}
	peer := []byte("peer one")
	if n, err := s.CatchupCursor(peer); err != nil || n != 0 {
		t.Fatalf("cursor before any: %d, %v", n, err)
	}
	if err := s.PutCatchupCursor(peer, 42); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := Open(path, Options{Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.List(ep, 3); err != nil || string(got) != string(list) {
		t.Fatalf("list %q, %v", got, err)
	}
	if n, err := s.CatchupCursor(peer); err != nil || n != 42 {
		t.Fatalf("cursor %d, %v", n, err)
	}
	if _, err := s.Prune(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ep, 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("list after its round was pruned: %v", err)
	}
}
