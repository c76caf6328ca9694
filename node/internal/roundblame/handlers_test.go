package roundblame

import (
	"context"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestStepReqOnlyOnItsWalk: a server answers for its step only on the
// walk of that round, at the output the walk reaches it, at its own
// position, and only once a client is named for a drop step.
func TestStepReqOnlyOnItsWalk(t *testing.T) {
	t.Parallel()
	const m, n = 3, 3
	f := newEpoch(t, m, n)
	q := f.final[1]
	nodes, hosts := f.chain(func() *Blame { return NewPayload(f.r, m, q, f.inputs[m][q]) })
	ctx := context.Background()
	from := f.v.Chain[2]
	x := nodes[1]
	last := nodes[2]
	want := last.svc.StepOf(ctx, last.ep, last.bl, 2)
	if want.St == nil {
		t.Fatalf("last server's own step: %+v", want)
	}
	ask := func(r uint32, t uint16, out uint32) error {
		req := wire.BlameReq{Epoch: f.v.ID, Round: r, T: t, Out: out}
		_, _, err := x.svc.OnStepReq(ctx, from, req.Marshal())
		return err
	}
	if err := ask(f.r, 1, want.St.In); err != nil {
		t.Fatalf("the walk's own ask: %v", err)
	}
	if err := ask(f.r, 1, (want.St.In+1)%n); err == nil || !strings.Contains(err.Error(), "asked at output") {
		t.Fatalf("an ask at another output: %v", err)
	}
	if err := ask(f.r, 0, want.St.In); err == nil {
		t.Fatal("server 1 answered for server 0")
	}
	hosts[1].ended = true
	if err := ask(0, 1, want.St.In); err == nil || !strings.Contains(err.Error(), "no round blame") {
		t.Fatalf("an ask of a round not blamed: %v", err)
	}

	nodes, hosts = f.chain(func() *Blame { return NewDouble(f.r) })
	hosts[1].ended = true
	req := wire.DropReq{Epoch: f.v.ID, Round: f.r, T: 1, In: 0}
	if _, _, err := nodes[1].svc.OnDropReq(ctx, f.v.Chain[0], req.Marshal()); err == nil || !strings.Contains(err.Error(), "no client named") {
		t.Fatalf("a drop step before a client was named: %v", err)
	}
}

// TestBlamesOneAtATime: a blame runs alone; one that settled with its
// slot dropped lets the next start, and is still found by its round.
func TestBlamesOneAtATime(t *testing.T) {
	t.Parallel()
	var b Blames
	if b.Any() || b.Busy() || b.Pending() {
		t.Fatal("no blame yet")
	}
	first := NewPayload(3, 2, 0, nil)
	b.Start(first)
	if !b.Busy() || !b.Pending() || !b.Walked(3) || b.Voided(3) {
		t.Fatal("a running blame")
	}
	first.Settled = true
	if !b.Busy() || b.Pending() {
		t.Fatal("a blame that ended the epoch lets another start")
	}
	first.Dropped = true
	if b.Busy() || !b.Voided(3) {
		t.Fatal("a blame that dropped its slot")
	}
	second := NewDouble(5)
	b.Start(second)
	if b.Of(3) != first || b.Of(5) != second || b.Of(4) != nil {
		t.Fatal("blames by round")
	}
	if b.Walked(5) || !b.Walked(3) {
		t.Fatal("a second onion is not a walk")
	}
	second.Settled, second.Dropped = true, true
	if b.Voided(5) {
		t.Fatal("a second onion's round is not void")
	}
}
