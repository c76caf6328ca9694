package jobdb

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/store"
)

// TestPending: the marker names the epoch and its rounds; one that does
// not parse, or names too many rounds, is removed and names nothing.
func TestPending(t *testing.T) {
	dir := t.TempDir()
	if _, _, ok := Pending(dir); ok {
		t.Fatal("a marker in an empty directory")
	}
	id := [32]byte{1, 2, 3}
	if err := MarkPending(dir, id, 40); err != nil {
		t.Fatal(err)
	}
	if got, R, ok := Pending(dir); !ok || got != id || R != 40 {
		t.Fatalf("marker %x %d %v", got[:3], R, ok)
	}
	DropPending(dir)
	if _, _, ok := Pending(dir); ok {
		t.Fatal("a marker after its drop")
	}
	for _, bad := range []string{"zz 4\n", "0102 4\n", "", "0101010101010101010101010101010101010101010101010101010101010101 0\n", "0101010101010101010101010101010101010101010101010101010101010101 99999999\n"} {
		path := filepath.Join(dir, PendingFile)
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := Pending(dir); ok {
			t.Errorf("marker %q taken", bad)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("marker %q not removed", bad)
		}
	}
}

func TestKeepFrom(t *testing.T) {
	for _, tc := range []struct{ r, W, want uint32 }{{0, 2, 0}, {4, 2, 0}, {5, 2, 1}, {20, 4, 14}} {
		if got := KeepFrom(tc.r, int(tc.W)); got != tc.want {
			t.Errorf("KeepFrom(%d, %d) = %d, want %d", tc.r, tc.W, got, tc.want)
		}
	}
}

// TestFind: a share's record is found under its key, a private one with
// its file's key, so the same plaintext is encrypted again under it; the
// private record key depends on the plaintext, the name and the chunk size.
func TestFind(t *testing.T) {
	if res := Find(nil, [32]byte{1}, false); res.Key != nil || res.Found {
		t.Fatal("a record without a database")
	}
	db, err := store.OpenClient(filepath.Join(t.TempDir(), "client.db"), store.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plain := bytes.Repeat([]byte("x"), 3*chunker.MinChunkSize)
	link, err := chunker.Share(bytes.NewReader(plain), "f", "", chunker.MinChunkSize, chunker.ShareOptions{Encrypt: true}, func(chunker.ID, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	key := PrivateKey(plain, "f", chunker.MinChunkSize)
	if key == PrivateKey(plain, "g", chunker.MinChunkSize) || key == PrivateKey(plain, "f", 2*chunker.MinChunkSize) || key == PrivateKey(plain[1:], "f", chunker.MinChunkSize) {
		t.Fatal("the private record key ignores the name, the chunk size or the plaintext")
	}
	if res := Find(db, key, true); res.Key == nil || *res.Key != key || res.Found {
		t.Fatalf("before its start: %+v", res)
	}
	if err := db.StartShareResume(key, link.String(), time.Now()); err != nil {
		t.Fatal(err)
	}
	res := Find(db, key, true)
	if !res.Found || res.Link != link.String() || !bytes.Equal(res.FileKey, link.Key[:]) {
		t.Fatalf("private record: %+v", res)
	}
}
