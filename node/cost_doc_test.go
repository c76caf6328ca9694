package node

import (
	"bytes"
	"os"
	"testing"

	"github.com/riffle-net/riffle/node/internal/proto"
)

const (
	operatorDoc    = "../docs/operator.md"
	costTableBegin = "<!-- BEGIN COST TABLE -->\n"
	costTableEnd   = "<!-- END COST TABLE -->"
)

// TestCostTableDoc: the cost table in docs/operator.md is costTable, from
// GroupCost and ServerCost; -update rewrites it.
func TestCostTableDoc(t *testing.T) {
	doc, err := os.ReadFile(operatorDoc)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte(costTableBegin))
	j := bytes.Index(doc, []byte(costTableEnd))
	if i < 0 || j < i {
		t.Fatalf("%s: no %q … %q markers", operatorDoc, costTableBegin, costTableEnd)
	}
	i += len(costTableBegin)
	want := proto.CostTable()
	if string(doc[i:j]) == want {
		return
	}
	if !*updateDoc {
		t.Fatalf("%s: the cost table is stale; run go test ./node -run TestCostTableDoc -update", operatorDoc)
	}
	out := append(append(append([]byte{}, doc[:i]...), want...), doc[j:]...)
	if err := os.WriteFile(operatorDoc, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
