package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node/internal/indexserve"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// TestServerRestartKeepsStore: a server restarted on the same data
// directory serves the chunks and index its previous run stored.
func TestServerRestartKeepsStore(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := ServerConfig{Network: testNet(t), DataDir: dir, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Params: testParams(4)}
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
	t.Parallel()
	virtual(t, func(t *testing.T) {
		in := []IndexEntry{{FileID: [32]byte{1}, Name: "a b.txt", Size: 1 << 40, Chunks: 7, Epoch: [32]byte{2}, Round: 9, Time: time.Unix(1700000001, 0)}}
		out := proto.IndexFromWire(indexserve.ToWire(in))
		want := in[0]
		want.Epoch = [32]byte{}
		if len(out) != 1 || out[0].FileID != want.FileID || out[0].Name != want.Name || out[0].Size != want.Size ||
			out[0].Chunks != want.Chunks || out[0].Round != want.Round || !out[0].Time.Equal(want.Time) || out[0].Epoch != want.Epoch {
			t.Fatalf("round trip: %+v, want %+v", out, want)
		}
	})
}
