package store

import (
	"bytes"
	"path/filepath"
	"testing"
)

func TestBlameRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := s.Blames(); err != nil || len(recs) != 0 {
		t.Fatalf("fresh store: %d records, %v", len(recs), err)
	}
	rec := BlameRecord{Epoch: [32]byte{1}, Number: 7, Round: 3, Role: "client", Slot: 2, Reason: "mac", Evidence: [][]byte{{1, 2, 3}}, Time: 42}
	if err := s.PutBlame(rec); err != nil {
		t.Fatal(err)
	}
	srv := BlameRecord{Epoch: [32]byte{1}, Number: 7, Round: 4, Role: "server", Server: 1, PeerID: "12D3", Reason: "altered"}
	if err := s.PutBlame(srv); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.Blames()
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if recs[0].Round != 3 || recs[0].Role != "client" || recs[0].Slot != 2 || !bytes.Equal(recs[0].Evidence[0], []byte{1, 2, 3}) {
		t.Fatalf("record 0: %+v", recs[0])
	}
	if recs[1].Role != "server" || recs[1].Server != 1 || recs[1].PeerID != "12D3" {
		t.Fatalf("record 1: %+v", recs[1])
	}
}
