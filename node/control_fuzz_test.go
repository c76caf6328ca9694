package node

import (
	"bytes"
	"testing"

	"github.com/riffle-net/riffle/chunker"
)

// FuzzControl: the control requests decode without panics, and an accepted
// request re-encodes to the same bytes.
func FuzzControl(f *testing.F) {
	f.Add(uint8(0), encCtlShare("/tmp/a file", true))
	f.Add(uint8(1), encCtlGet(chunker.Link{ID: chunker.Sum([]byte("x"))}, "/tmp/out"))
	key := chunker.FileKey{1}
	f.Add(uint8(1), encCtlGet(chunker.Link{ID: chunker.Sum([]byte("y")), Key: &key}, "/d"))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		if which%2 == 0 {
			path, enc, err := parseCtlShare(b)
			if err == nil && !bytes.Equal(encCtlShare(path, enc), b) {
				t.Fatal("share request decode→encode differs")
			}
			return
		}
		link, dir, err := parseCtlGet(b)
		if err == nil && !bytes.Equal(encCtlGet(link, dir), b) {
			t.Fatal("get request decode→encode differs")
		}
	})
}
