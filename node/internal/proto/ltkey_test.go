package proto

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Long-term client keys (docs/protocol.md §8 "After a blame").

// TestLongTermKeyFile: a client's long-term key is created on first run
// with mode 0600, read back the same afterwards, refused when others may
// read it, and prints as its type name only.
func TestLongTermKeyFile(t *testing.T) {
	virtual(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "c")
		k, err := LoadLongTermKey(dir, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, LongTermKeyFile)
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key file: %v, mode %v", err, st.Mode().Perm())
		}
		k2, err := LoadLongTermKey(dir, rand.Reader)
		if err != nil || k2.Public() != k.Public() {
			t.Fatalf("key read back differs: %v", err)
		}
		if s := fmt.Sprintf("%v %+v %#v %s", k, k, *k, *k); strings.Contains(s, fmt.Sprintf("%x", k.priv.Seed()[:4])) || !strings.Contains(s, "redacted") {
			t.Fatalf("a long-term key prints its secret: %s", s)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadLongTermKey(dir, rand.Reader); err == nil {
			t.Fatal("a key file readable by others was accepted")
		}
	})
}
