package node

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

var updateDoc = flag.Bool("update", false, "rewrite the message table in docs/proto-node.md")

const (
	msgDoc      = "../docs/proto-node.md"
	msgDocBegin = "<!-- BEGIN MESSAGE TABLE -->\n"
	msgDocEnd   = "<!-- END MESSAGE TABLE -->"
)

// TestMessageTableDoc: the message table in docs/proto-node.md is
// wire.Markdown at the server's ceilings; -update rewrites it.
func TestMessageTableDoc(t *testing.T) {
	doc, err := os.ReadFile(msgDoc)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte(msgDocBegin))
	j := bytes.Index(doc, []byte(msgDocEnd))
	if i < 0 || j < i {
		t.Fatalf("%s: no %q … %q markers", msgDoc, msgDocBegin, msgDocEnd)
	}
	i += len(msgDocBegin)
	want := wire.Markdown(transport.Ceilings)
	if string(doc[i:j]) == want {
		return
	}
	if !*updateDoc {
		t.Fatalf("%s: the message table is stale; run go test ./node -run TestMessageTableDoc -update", msgDoc)
	}
	out := append(append(append([]byte{}, doc[:i]...), want...), doc[j:]...)
	if err := os.WriteFile(msgDoc, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
