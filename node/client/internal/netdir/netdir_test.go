package netdir

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

func ids(t *testing.T, n int) []peer.ID {
	t.Helper()
	var out []peer.ID
	for i := 0; i < n; i++ {
		_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p, err := peer.IDFromPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestMoveAsideBringBack: a network's files move aside whole, a chain of
// another network brings nothing back, and one that shares a server with
// the kept list brings them back and removes the kept directory.
func TestMoveAsideBringBack(t *testing.T) {
	dir := t.TempDir()
	files := []string{"a", "b"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := ids(t, 4)
	kept, err := MoveAside(dir, append(files, "absent"), p[:2])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s still in the data directory (%v)", f, err)
		}
		if b, err := os.ReadFile(filepath.Join(kept, f)); err != nil || string(b) != f {
			t.Errorf("%s not kept: %q, %v", f, b, err)
		}
	}
	if back, err := BringBack(dir, files, p[2:]); back != "" || err != nil {
		t.Fatalf("another network's chain brought back %q (%v)", back, err)
	}
	back, err := BringBack(dir, files, []peer.ID{p[3], p[1]})
	if err != nil || back != kept {
		t.Fatalf("brought back %q (%v), want %q", back, err, kept)
	}
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != f {
			t.Errorf("%s not back: %q, %v", f, b, err)
		}
	}
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("kept directory not removed (%v)", err)
	}
}

// TestMoveAsideTwice: the same servers twice get two directories, the
// first not overwritten.
func TestMoveAsideTwice(t *testing.T) {
	dir := t.TempDir()
	p := ids(t, 1)
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "a"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	k1, err := MoveAside(dir, []string{"a"}, p)
	if err != nil {
		t.Fatal(err)
	}
	write("two")
	k2, err := MoveAside(dir, []string{"a"}, p)
	if err != nil || k1 == k2 {
		t.Fatalf("second move aside: %q (%v), first %q", k2, err, k1)
	}
	if b, _ := os.ReadFile(filepath.Join(k1, "a")); string(b) != "one" {
		t.Errorf("first kept copy holds %q", b)
	}
}

func TestSets(t *testing.T) {
	p := ids(t, 3)
	set := PeerSet([][]byte{[]byte(p[0]), []byte(p[1])})
	if !Overlaps(set, p[1:]) || Overlaps(set, p[2:]) {
		t.Error("Overlaps")
	}
	if !SameSet(set, []peer.ID{p[1], p[0]}) || SameSet(set, p) || SameSet(set, p[:1]) {
		t.Error("SameSet")
	}
	if s := SortedIDs(set); len(s) != 2 || s[0] > s[1] {
		t.Errorf("SortedIDs %v", s)
	}
}
