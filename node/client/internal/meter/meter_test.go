package meter

import (
	"errors"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestCheckOncePerGroup: a group over the budget is refused with
// ErrOverBudget, checked once per set of constants (the round limit not
// one of them), and a budget above the worst case takes it.
func TestCheckOncePerGroup(t *testing.T) {
	p := proto.DefaultParams().Wire()
	worst := proto.GroupCost(proto.Params(p)).Worst.Max()
	var g Group
	if _, _, ok := g.Worst(); ok {
		t.Fatal("a worst case before any check")
	}
	if err := g.Check(p, worst/2); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("budget of half the worst case: %v", err)
	}
	if send, recv, ok := g.Worst(); !ok || max(send, recv)/3600 != worst {
		t.Fatalf("worst case %v %v %v, want %v/s", send, recv, ok, worst)
	}
	if got := g.Gap(); got != time.Duration(p.RegWindowMs)*time.Millisecond {
		t.Fatalf("gap %v", got)
	}
	// The same constants again: not checked again.
	q := p
	q.RoundLimitMs++
	if err := g.Check(q, worst/2); err != nil {
		t.Fatalf("same group checked again: %v", err)
	}
	// Other constants: checked, and under this budget.
	q.K++
	if err := g.Check(q, 10*worst); err != nil {
		t.Fatalf("a budget of ten times the worst case: %v", err)
	}
	var h Group
	if err := h.Check(p, 0); err != nil {
		t.Fatalf("no budget: %v", err)
	}
}

func TestMoved(t *testing.T) {
	at := time.Unix(1e6, 0)
	g := Group{Since: at}
	g.Sent(3600)
	g.Received(7200)
	g.Sent(3600)
	if s, r := g.Moved(at.Add(2 * time.Hour)); s != 3600 || r != 3600 {
		t.Fatalf("moved %v %v an hour", s, r)
	}
	if s, r := g.Moved(at); s != 0 || r != 0 {
		t.Fatalf("moved %v %v at the start", s, r)
	}
}
