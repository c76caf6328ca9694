package store

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestKeyRecords: long-term key exclusions and a primary's clean/dry
// records survive a reopen (docs/proto-store.md, "Server file: buckets").
func TestKeyRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if x, err := s.KeyExclusions(); err != nil || len(x) != 0 {
		t.Fatalf("fresh store: %d exclusions, %v", len(x), err)
	}
	a, b := [32]byte{1}, [32]byte{2}
	if err := s.PutKeyExclusion(a, KeyExclusion{Strikes: 2, Until: 19, Evidence: []byte{9, 8}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKeySeen(a, KeySeen{Clean: 7, Dry: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKeySeen(b, KeySeen{Clean: 8}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKeySeen(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x, err := s.KeyExclusions()
	if err != nil || len(x) != 1 || x[a].Strikes != 2 || x[a].Until != 19 || !bytes.Equal(x[a].Evidence, []byte{9, 8}) {
		t.Fatalf("exclusions after reopen: %+v, %v", x, err)
	}
	seen, err := s.KeysSeen()
	if err != nil || len(seen) != 1 || seen[b].Clean != 8 {
		t.Fatalf("seen after reopen: %+v, %v", seen, err)
	}
	if err := s.PutKeyExclusion(a, KeyExclusion{Evidence: make([]byte, maxKeyEvidence+1)}); err == nil {
		t.Fatal("oversized evidence stored")
	}
}
