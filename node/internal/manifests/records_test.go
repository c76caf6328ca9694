package manifests

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// TestRecords: every manifest candidate is stored with its bytes, a
// root's with its index entry; one that waited is read back by id; one
// that does not parse or cannot be read is left out, the read's error
// returned.
func TestRecords(t *testing.T) {
	var root, node []byte
	chunks := map[[32]byte][]byte{}
	_, err := chunker.Share(bytes.NewReader(make([]byte, 300<<10)), "f.bin", "", chunker.MinChunkSize, chunker.ShareOptions{}, func(id chunker.ID, c []byte) error {
		chunks[id] = c
		if m, err := chunker.DecodeManifest(c); err == nil {
			if m.Root {
				root = c
			} else {
				node = c
			}
		}
		return nil
	})
	if err != nil || root == nil {
		t.Fatalf("share: %v (root %v)", err, root != nil)
	}
	rootMan, _ := chunker.DecodeManifest(root)
	epoch, now := [32]byte{1}, time.Unix(1000, 0)
	waiting := chunker.Sum(root)
	bad, gone := [32]byte{2}, [32]byte{3}
	chunks[bad] = []byte("not a manifest")
	get := func(id [32]byte) ([]byte, error) {
		if b, ok := chunks[id]; ok {
			return b, nil
		}
		return nil, errors.New("not held")
	}
	r := Round{Round: 4, Cands: []Cand{
		{Pos: 7, ID: waiting},
		{ID: bad},
		{ID: gone},
		{Pos: 1, ID: chunker.Sum(root), Data: root, Man: rootMan},
	}}
	if node != nil {
		m, _ := chunker.DecodeManifest(node)
		r.Cands = append(r.Cands, Cand{Pos: 2, ID: chunker.Sum(node), Data: node, Man: m})
	}
	mans, index, err := Records(epoch, r, now, get)
	if err == nil {
		t.Fatal("an unreadable candidate's error not returned")
	}
	want := 2
	if node != nil {
		want = 3
	}
	if len(mans) != want || len(index) != 2 {
		t.Fatalf("%d manifests, %d index entries; want %d and the root's 2", len(mans), len(index), want)
	}
	if mans[0].Pos != 7 || mans[0].Round != 4 || mans[0].Epoch != epoch || !bytes.Equal(mans[0].Data, root) {
		t.Fatalf("the waiting candidate stored as %+v", mans[0])
	}
	if index[0].Name != "f.bin" || index[0].Time != now || index[0].Chunks != uint32(rootMan.NumChunks) {
		t.Fatalf("index entry %+v", index[0])
	}
}
