package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/riffle-net/riffle/store"
)

// TestBoltStoreReopen: a server's store in its data directory keeps the
// chunks, the index and the request lists across a restart (§7).
func TestBoltStoreReopen(t *testing.T) {
	virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		st, err := openStore(dir, StoreOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		data := []byte("a published chunk")
		id := sha256.Sum256(data)
		var epoch [32]byte
		epoch[0] = 7
		idx := []IndexEntry{{FileID: id, Name: "f.txt", Size: 17, Chunks: 1, Epoch: epoch, Round: 3, Time: time.Unix(1700000000, 0)}}
		if err := st.PutRound(epoch, 3, [][32]byte{id}, []store.Chunk{{ID: id, Data: data}}, idx); err != nil {
			t.Fatal(err)
		}
		if err := st.PutRequests(epoch, 3, []store.Request{{ID: id, Length: uint32(len(data))}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		st, err = openStore(dir, StoreOptions{}, nil)
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
	})
}

// TestServerRestartKeepsStore: a server restarted on the same data
// directory serves the chunks and index its previous run stored.
func TestServerRestartKeepsStore(t *testing.T) {
	virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := ServerConfig{DataDir: dir, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Params: testParams(4)}
		s, err := NewServer(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		id1 := s.ID()
		data := []byte("kept across restarts")
		cid := sha256.Sum256(data)
		idx := []IndexEntry{{FileID: cid, Name: "k.txt", Size: uint64(len(data)), Chunks: 1, Epoch: [32]byte{9}, Time: time.Unix(1700000000, 0)}}
		if err := s.store.PutRound([32]byte{9}, 0, [][32]byte{cid}, []store.Chunk{{ID: cid, Data: data}}, idx); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = NewServer(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.ID() != id1 {
			t.Fatalf("identity changed across restart: %s then %s", id1, s.ID())
		}
		if got, err := s.store.GetChunk(cid); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("chunk after restart: %q, %v", got, err)
		}
		if ix, err := s.store.Index(); err != nil || len(ix) != 1 || ix[0].FileID != cid {
			t.Fatalf("index after restart: %+v, %v", ix, err)
		}
	})
}

// TestIndexWireRoundTrip: an index entry crosses the client protocol with
// every field but the epoch, which the wire does not carry.
func TestIndexWireRoundTrip(t *testing.T) {
	virtual(t, func(t *testing.T) {
		in := []IndexEntry{{FileID: [32]byte{1}, Name: "a b.txt", Size: 1 << 40, Chunks: 7, Epoch: [32]byte{2}, Round: 9, Time: time.Unix(1700000001, 0)}}
		out := indexFromWire(indexToWire(in))
		want := in[0]
		want.Epoch = [32]byte{}
		if len(out) != 1 || out[0].FileID != want.FileID || out[0].Name != want.Name || out[0].Size != want.Size ||
			out[0].Chunks != want.Chunks || out[0].Round != want.Round || !out[0].Time.Equal(want.Time) || out[0].Epoch != want.Epoch {
			t.Fatalf("round trip: %+v, want %+v", out, want)
		}
	})
}
