package chunks

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/riffle-net/riffle/store"
)

// TestBoltStoreReopen: a server's store in its data directory keeps the
// chunks, the index and the request lists across a restart (§7).
func TestBoltStoreReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := OpenStore(dir, store.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("a published chunk")
	id := sha256.Sum256(data)
	var epoch [32]byte
	epoch[0] = 7
	idx := []store.IndexEntry{{FileID: id, Name: "f.txt", Size: 17, Chunks: 1, Epoch: epoch, Round: 3, Time: time.Unix(1700000000, 0)}}
	if err := st.PutRound(epoch, 3, [][32]byte{id}, []store.Chunk{{ID: id, Data: data}}, idx); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRequests(epoch, 3, []store.Request{{ID: id, Length: uint32(len(data))}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = OpenStore(dir, store.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.GetChunk(id)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("chunk after reopen: %q, %v", got, err)
	}
	if ok, err := st.HasChunk(id); !ok || err != nil {
		t.Fatalf("HasChunk after reopen: %v, %v", ok, err)
	}
	err = st.ViewChunks([][32]byte{id}, func(rows [][]byte) error {
		if len(rows) != 1 || !bytes.Equal(rows[0], data) {
			t.Fatalf("ViewChunks rows %q", rows)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := st.Index()
	if err != nil || len(ix) != 1 || ix[0].FileID != id || string(ix[0].Name) != "f.txt" || !ix[0].Time.Equal(time.Unix(1700000000, 0)) || ix[0].Epoch != epoch {
		t.Fatalf("index after reopen: %+v, %v", ix, err)
	}
	var missing [32]byte
	if _, err := st.GetChunk(missing); !errors.Is(err, ErrNoChunk) {
		t.Fatalf("missing chunk: %v, want ErrNoChunk", err)
	}
}
