package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A client that prunes its onions as rounds end keeps a few at a time, and
// its file stops growing however long the epochs are.
func TestPutOnionPruned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.db")
	db, err := OpenClient(path, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	epoch := EpochID{7}
	onion := func(r uint32) []byte { return bytes.Repeat([]byte{byte(r)}, 64<<10) }
	const keep = 3
	var size100 int64
	for r := uint32(0); r < 400; r++ {
		from := uint32(0)
		if r >= keep {
			from = r - keep
		}
		if err := db.PutOnionPruned(epoch, r, onion(r), from); err != nil {
			t.Fatal(err)
		}
		if r == 100 {
			st, _ := os.Stat(path)
			size100 = st.Size()
		}
	}
	for r := uint32(0); r < 400; r++ {
		got, err := db.Onion(epoch, r)
		switch {
		case r < 399-keep && !errors.Is(err, ErrNotFound):
			t.Fatalf("round %d's onion kept after its round", r)
		case r >= 399-keep && (err != nil || !bytes.Equal(got, onion(r))):
			t.Fatalf("round %d's onion: %v", r, err)
		}
	}
	if st, _ := os.Stat(path); st.Size() > size100 {
		t.Fatalf("file grew from %d to %d bytes between rounds 100 and 400", size100, st.Size())
	}
	// The same bytes again are a no-op, others a conflict, as with PutOnion.
	if err := db.PutOnionPruned(epoch, 399, onion(399), 396); err != nil {
		t.Fatal(err)
	}
	if err := db.PutOnionPruned(epoch, 399, onion(1), 396); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second sealing of a round: %v, want ErrConflict", err)
	}
}
