package manifests

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/store"
)

// TestIndexRounds: a round is done once the caps are done with it, with
// the ids it took; a round published ahead waits for the one before it;
// once the epoch is over (Flush) a round added is taken at once, its ids
// known, so that its request list is not held up for ever.
func TestIndexRounds(t *testing.T) {
	var ix Index
	c := func(pos int, tag byte) Cand { return Cand{Pos: pos, ID: [32]byte{tag}, Data: []byte{1}} }
	if rs := ix.Add(8, 256<<10, 1, []Cand{c(1, 1)}); len(rs) != 0 {
		t.Fatalf("round 1 taken before round 0: %+v", rs)
	}
	if _, done := ix.Taken(1); done {
		t.Fatal("round 1 done before round 0")
	}
	rs := ix.Add(8, 256<<10, 0, nil)
	if len(rs) != 2 {
		t.Fatalf("rounds 0 and 1: %+v", rs)
	}
	if ids, done := ix.Taken(1); !done || len(ids) != 1 || ids[0] != [32]byte{1} {
		t.Fatalf("round 1: %v done %v", ids, done)
	}
	if ids, done := ix.Taken(0); !done || len(ids) != 0 {
		t.Fatalf("round 0: %v done %v", ids, done)
	}
	// Round 3 waits for round 2, which never comes: the end takes it.
	ix.Add(8, 256<<10, 3, []Cand{c(2, 3)})
	if rs := ix.Flush(); len(rs) != 1 || rs[0].Round != 3 {
		t.Fatalf("flush: %+v", rs)
	}
	if _, done := ix.Taken(3); !done {
		t.Fatal("round 3 not done at the end")
	}
	// After the end a round added (published as the epoch ended) is
	// taken at once.
	if rs := ix.Add(8, 256<<10, 5, []Cand{c(4, 5)}); len(rs) != 1 || rs[0].Round != 5 {
		t.Fatalf("round 5 after the end: %+v", rs)
	}
	if _, done := ix.Taken(5); !done {
		t.Fatal("round 5 added after the end not done")
	}
}

type memStore struct {
	chunks map[[32]byte][]byte
	mans   []store.Manifest
	index  []store.IndexEntry
	puts   int
}

func (m *memStore) GetChunk(id [32]byte) ([]byte, error) {
	if d, ok := m.chunks[id]; ok {
		return d, nil
	}
	return nil, errors.New("not held")
}

func (m *memStore) PutManifests(mans []store.Manifest, index []store.IndexEntry) error {
	m.mans, m.index = append(m.mans, mans...), append(m.index, index...)
	m.puts++
	return nil
}

// TestPut: what a round took is stored, a waiting candidate read back
// from the store, a root's index entry with it; a round that took
// nothing stores nothing.
func TestPut(t *testing.T) {
	var root []byte
	_, err := chunker.Share(bytes.NewReader(make([]byte, 300<<10)), "f.bin", "", chunker.MinChunkSize, chunker.ShareOptions{}, func(id chunker.ID, c []byte) error {
		if m, err := chunker.DecodeManifest(c); err == nil && m.Root {
			root = c
		}
		return nil
	})
	if err != nil || root == nil {
		t.Fatalf("share: %v (root %v)", err, root != nil)
	}
	id := chunker.Sum(root)
	st := &memStore{chunks: map[[32]byte][]byte{id: root}}
	rs := []Round{{Round: 2, Cands: []Cand{{Pos: 1, ID: id}}}, {Round: 3}}
	Put(st, slog.New(slog.NewTextHandler(io.Discard, nil)), [32]byte{1}, rs)
	if len(st.mans) != 1 || len(st.index) != 1 || st.mans[0].ID != id || st.index[0].Round != 2 || st.puts != 1 {
		t.Fatalf("stored %d manifests, %d index entries in %d puts", len(st.mans), len(st.index), st.puts)
	}
}
