//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestPrivateShareSealedIndex (§6.4 v3): a private file's manifest, root
// and inner nodes, goes through the synced index sealed. The link's key
// opens it there, so a get fetches the file whole without requesting any
// manifest id; whoever syncs the index without the key sees chunks of
// exactly b bytes that show no chunk id of the file, and no index entry
// (name, size) for it.
func TestPrivateShareSealedIndex(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		data := make([]byte, 40<<10) // a root and two nodes at 1 KiB chunks
		rand.Read(data)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		up, down, asked := requestNet(t, ctx)
		link, err := up.Share(ctx, bytes.NewReader(data), "secret-plan.bin", true)
		if err != nil {
			t.Fatal(err)
		}
		if link.Key == nil {
			t.Fatal("private share without a key")
		}
		path, err := down.Get(ctx, link, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched file differs (%v)", err)
		}

		// What any client syncs: the entries and the manifest chunks.
		entries, mans, err := down.Inspect().SyncIndex(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.FileID == link.ID || e.Name != "" && bytes.Contains([]byte(e.Name), []byte("secret")) {
				t.Fatalf("index shows the private file: %+v", e)
			}
		}
		// Every id of the file: the same share under the link's key.
		var ids, manIDs [][32]byte
		again, err := chunker.Share(bytes.NewReader(data), "secret-plan.bin", "", MinChunkSize,
			chunker.ShareOptions{Encrypt: true, Rand: bytes.NewReader(link.Key[:])}, func(id chunker.ID, c []byte) error {
				ids = append(ids, id)
				if proto.IsManifest(c) {
					manIDs = append(manIDs, id)
				}
				return nil
			})
		if err != nil || again.ID != link.ID {
			t.Fatalf("shared again: %v, %v", again, err)
		}
		if len(manIDs) != 3 {
			t.Fatalf("%d manifest chunks, want a root and two nodes", len(manIDs))
		}
		for _, id := range manIDs {
			b, ok := mans[id]
			if !ok {
				t.Fatalf("manifest %x not in the synced index", id[:6])
			}
			if len(b) != MinChunkSize {
				t.Fatalf("indexed manifest of %d bytes, want b = %d", len(b), MinChunkSize)
			}
			for _, x := range ids {
				if bytes.Contains(b, x[:]) {
					t.Fatalf("indexed manifest shows chunk id %x", x[:6])
				}
			}
			if bytes.Contains(b, []byte("secret")) || bytes.Contains(b, []byte(chunker.EncryptedName)) {
				t.Fatal("indexed manifest shows a name")
			}
			if om, err := chunker.DecodeManifest(b); err != nil || !om.Opaque {
				t.Fatalf("indexed manifest decodes as %+v, %v; want opaque", om, err)
			}
		}
		for _, id := range manIDs {
			if n := asked(id); n != 0 {
				t.Errorf("manifest %x requested %d times by PIR", id[:6], n)
			}
		}
	})
}
