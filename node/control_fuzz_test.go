package node

import (
	"bytes"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
)

// FuzzControl: the control requests decode without panics, and an accepted
// request re-encodes to the same bytes.
func FuzzControl(f *testing.F) {
	f.Add(uint8(0), encCtlShare("/tmp/a file", true, 3))
	f.Add(uint8(1), encCtlGet(chunker.Link{ID: chunker.Sum([]byte("x"))}, "/tmp/out", 0, DefaultUnlistedEpochs))
	key := chunker.FileKey{1}
	f.Add(uint8(1), encCtlGet(chunker.Link{ID: chunker.Sum([]byte("y")), Key: &key}, "/d", 8, 0))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		if which%2 == 0 {
			path, enc, maxEp, err := parseCtlShare(b)
			if err == nil && !bytes.Equal(encCtlShare(path, enc, maxEp), b) {
				t.Fatal("share request decode→encode differs")
			}
			return
		}
		// Links are case-insensitive (base32 is often written in upper
		// case) and may come with or without checksums, and the bound on
		// unlisted epochs is left out at its default: a request
		// re-encodes to a canonical form that decodes to the same job and
		// re-encodes to itself.
		link, dir, maxEp, unlisted, err := parseCtlGet(b)
		if err != nil {
			return
		}
		re := encCtlGet(link, dir, maxEp, unlisted)
		if !bytes.Equal(re, b) {
			d := wire.Dec{B: b}
			text := string(d.Bytes(maxLink, "link"))
			if l, err := chunker.ParseLink(strings.ToLower(text)); err != nil || l.String() != link.String() {
				t.Fatalf("get request decode→encode changes the link %q", text)
			}
		}
		l2, d2, m2, u2, err := parseCtlGet(re)
		if err != nil || l2.String() != link.String() || d2 != dir || m2 != maxEp || u2 != unlisted {
			t.Fatal("a re-encoded get request decodes to another job")
		}
		if !bytes.Equal(encCtlGet(l2, d2, m2, u2), re) {
			t.Fatal("the canonical get request is not stable")
		}
	})
}
