package netdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/store"
)

func bound(b *Binding) bool {
	select {
	case <-b.Bound():
		return true
	default:
		return false
	}
}

// TestBindingHoldsBack: a database whose record names servers other than
// the primary waits, unbound, for the first chain; a chain sharing no
// server with the record switches the directory's files aside; the
// binding happens once.
func TestBindingHoldsBack(t *testing.T) {
	dir := t.TempDir()
	db, err := store.OpenClient(filepath.Join(dir, "client.db"), store.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := ids(t, 4)
	rec := [][]byte{[]byte(p[0]), []byte(p[1])}

	// The primary is a recorded server: bound at once.
	b := NewBinding(dir, []string{"client.db"})
	if got := b.Start(db, rec, p[1]); got != db || !bound(b) || b.Unbound() != nil {
		t.Fatal("a primary of the record: not bound at start")
	}
	if !b.Recorded(p[:2]) || b.Recorded(p[:3]) {
		t.Fatal("Recorded")
	}

	// Another primary: held back until the first chain.
	b = NewBinding(dir, []string{"client.db"})
	if got := b.Start(db, rec, p[2]); got != nil || bound(b) || b.Unbound() != db {
		t.Fatal("another primary: the database not held back")
	}
	held, same, first := b.Take(p[2:])
	if held != db || same || !first {
		t.Fatalf("Take of another network's chain: %v %v %v", held == db, same, first)
	}
	db.Close()
	line, backErr, err := b.Switch(p[2:])
	if err != nil || backErr != nil || !strings.Contains(line, NetworksDir) {
		t.Fatalf("switch: %q %v %v", line, backErr, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "client.db")); !os.IsNotExist(err) {
		t.Fatalf("the other network's database is still in place (%v)", err)
	}
	b.MarkBound()
	if !bound(b) {
		t.Fatal("not bound after MarkBound")
	}
	if _, _, first := b.Take(p[:1]); first {
		t.Fatal("bound twice")
	}
	b.Record([][]byte{[]byte(p[3])})
	if !b.Recorded([]peer.ID{p[3]}) {
		t.Fatal("Record")
	}
}
