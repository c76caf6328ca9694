package roundblame

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestWalkPayloadNamesItsClient: a bad payload at output q is walked from
// the last server down, every honest step checks, and the client of the
// slot whose route ends at q is named, with every step as evidence.
func TestWalkPayloadNamesItsClient(t *testing.T) {
	t.Parallel()
	const m, n = 3, 3
	f := newEpoch(t, m, n)
	for slot := range n {
		q := f.final[slot]
		nodes, _ := f.chain(func() *Blame { return NewPayload(f.r, m, q, f.inputs[m][q]) })
		last := nodes[m-1]
		c := last.svc.Walk(last.ep, last.bl)
		if c == nil || c.Server != -1 || c.Slot != slot {
			t.Fatalf("payload at output %d: named %v, want the client in slot %d", q, c, slot)
		}
		if ev := last.bl.Evidence(); len(ev) != m {
			t.Fatalf("%d pieces of evidence, want the %d steps", len(ev), m)
		}
	}
}

// TestWalkNamesAlteringServer: server 1 alters an entry of its output and
// signs it; server 2's MAC fails there and it accuses; the walk names
// server 1, whose input with its layer removed is not what it passed on.
func TestWalkNamesAlteringServer(t *testing.T) {
	t.Parallel()
	const m, n = 3, 4
	f := newEpoch(t, m, n)
	q := f.final[2]
	out := f.layer(t, 1, f.inputs[1])
	bad := make([][]byte, len(out))
	copy(bad, out)
	p := -1
	for in, o := range f.secs[2].Forward() {
		if o == q {
			p = in
		}
	}
	bad[p] = append([]byte(nil), out[p]...)
	bad[p][0] ^= 1
	f.pass(t, 1, bad)
	a := f.accuse(t, 2, p)
	nodes, hosts := f.chain(func() *Blame { return NewAccused(f.r, a) })
	c := nodes[0].svc.Walk(nodes[0].ep, nodes[0].bl)
	if c == nil || c.Server != 1 || !strings.Contains(c.Why, "altered") {
		t.Fatalf("named %v (%v), want server 1 for an altered entry", c, c)
	}
	if hosts[0].calls == 0 {
		t.Fatal("server 0 named server 1 without its step")
	}
}

// TestWalkFalseAccusation: an accusation of an entry whose MAC verifies
// names its accuser, and nobody is asked for a step.
func TestWalkFalseAccusation(t *testing.T) {
	t.Parallel()
	const m, n = 3, 3
	f := newEpoch(t, m, n)
	a := f.accuse(t, 2, 1)
	nodes, hosts := f.chain(func() *Blame { return NewAccused(f.r, a) })
	for s, x := range nodes {
		c := x.svc.Walk(x.ep, x.bl)
		if c == nil || c.Server != 2 || !strings.Contains(c.Why, "false accusation") {
			t.Fatalf("server %d named %v, want the accuser", s, c)
		}
		if hosts[s].calls != 0 {
			t.Fatalf("server %d asked for %d steps of a false accusation", s, hosts[s].calls)
		}
		if res := x.svc.StepOf(context.Background(), x.ep, x.bl, 1); res.St != nil || res.Err == nil {
			t.Fatalf("server %d revealed a step for a false accusation", s)
		}
	}
}

// TestWalkStepOnce: a walk's steps are fetched once, a second walk of the
// same blame asks nobody again; a step that cannot be had stops the walk
// naming nobody.
func TestWalkStepOnce(t *testing.T) {
	t.Parallel()
	const m, n = 3, 3
	f := newEpoch(t, m, n)
	q := f.final[0]
	nodes, hosts := f.chain(func() *Blame { return NewPayload(f.r, m, q, f.inputs[m][q]) })
	last := nodes[m-1]
	if c := last.svc.Walk(last.ep, last.bl); c == nil || c.Slot != 0 {
		t.Fatalf("named %v", c)
	}
	calls := hosts[m-1].calls
	if calls != m-1 {
		t.Fatalf("%d calls for %d other servers' steps", calls, m-1)
	}
	if c := last.svc.Walk(last.ep, last.bl); c == nil || c.Slot != 0 || hosts[m-1].calls != calls {
		t.Fatalf("second walk: named %v after %d more calls", c, hosts[m-1].calls-calls)
	}

	nodes, hosts = f.chain(func() *Blame { return NewPayload(f.r, m, q, f.inputs[m][q]) })
	hosts[m-1].fail = errors.New("unreachable")
	if c := nodes[m-1].svc.Walk(nodes[m-1].ep, nodes[m-1].bl); c != nil {
		t.Fatalf("a walk whose step was not had named %v", c)
	}
}

// TestCheckStepNamesIt: a step not signed by its server, or one that
// answers another output, names that server.
func TestCheckStepNamesIt(t *testing.T) {
	t.Parallel()
	const m, n = 2, 3
	f := newEpoch(t, m, n)
	q := f.final[1]
	nodes, _ := f.chain(func() *Blame { return NewPayload(f.r, m, q, f.inputs[m][q]) })
	x := nodes[1]
	res := x.svc.StepOf(context.Background(), x.ep, x.bl, 1)
	if res.St == nil || res.Named != nil || res.Err != nil {
		t.Fatalf("own step: %+v", res)
	}
	roots := Roots(f.rootsAt)
	if c := CheckStep(x.ep, f.setup, roots, f.r, 1, q, f.inputs[m][q], res.St); c != nil {
		t.Fatalf("an honest step named %v", c)
	}
	forged := *res.St
	var err error
	if forged.Sig, err = proto.Sign(f.privs[0], blame.BlameStepDigest(&forged)); err != nil {
		t.Fatal(err)
	}
	if c := CheckStep(x.ep, f.setup, roots, f.r, 1, q, f.inputs[m][q], &forged); c == nil || c.Server != 1 || !strings.Contains(c.Why, "not signed") {
		t.Fatalf("a step signed by another server: named %v", c)
	}
	other := (q + 1) % n
	if c := CheckStep(x.ep, f.setup, roots, f.r, 1, other, f.inputs[m][other], res.St); c == nil || c.Server != 1 || !strings.Contains(c.Why, "another question") {
		t.Fatalf("a step of another output: named %v", c)
	}
}

// TestCheckEvidenceSecondRoot: an input entry under a root its sender
// signed that differs from the root held here names the sender.
func TestCheckEvidenceSecondRoot(t *testing.T) {
	t.Parallel()
	const m, n = 2, 3
	f := newEpoch(t, m, n)
	ep := &Ep{V: f.v, Pos: 1}
	ev, err := f.evidence(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := CheckEvidence(ep, f.rootsAt, f.r, 1, 2, &ev); c != nil || err != nil {
		t.Fatalf("an honest entry: %v, %v", c, err)
	}
	held := func(r uint32, t int) (wire.Root, bool) {
		x, ok := f.rootsAt(r, t)
		x.Root[0] ^= 1
		return x, ok
	}
	if c, err := CheckEvidence(ep, held, f.r, 1, 2, &ev); err != nil || c == nil || c.Server != 0 || !strings.Contains(c.Why, "two roots") {
		t.Fatalf("a second root: %v, %v; want server 0 named", c, err)
	}
	ev.Entry[0] ^= 1
	if c, err := CheckEvidence(ep, f.rootsAt, f.r, 1, 2, &ev); c != nil || err == nil {
		t.Fatalf("an entry off its signed root: %v, %v; want an error", c, err)
	}
}

// TestDropRevealsRoute: the reveal of a named slot's route goes forward
// from S_0, each step checked, to the slot's output position; a drop step
// that sends the slot elsewhere names its server; none is revealed before
// a client is named.
func TestDropRevealsRoute(t *testing.T) {
	t.Parallel()
	const m, n = 3, 4
	f := newEpoch(t, m, n)
	for slot := range n {
		nodes, _ := f.chain(func() *Blame {
			bl := NewDouble(f.r)
			bl.SlotKnown, bl.Slot = true, slot
			return bl
		})
		x := nodes[m-1]
		res := x.svc.DropOf(context.Background(), x.ep, x.bl, m-1)
		if res.St == nil || res.Named != nil || int(res.St.Out) != f.final[slot] {
			t.Fatalf("slot %d: %+v, want output %d", slot, res, f.final[slot])
		}
	}
	nodes, _ := f.chain(func() *Blame { return NewDouble(f.r) })
	if res := nodes[0].svc.DropOf(context.Background(), nodes[0].ep, nodes[0].bl, 0); res.St != nil || res.Err == nil {
		t.Fatalf("a reveal before a client was named: %+v", res)
	}
	nodes, _ = f.chain(func() *Blame {
		bl := NewDouble(f.r)
		bl.SlotKnown, bl.Slot = true, 0
		return bl
	})
	x := nodes[1]
	res := x.svc.DropOf(context.Background(), x.ep, x.bl, 1)
	if res.St == nil {
		t.Fatalf("%+v", res)
	}
	in := int(res.St.In)
	lie := *res.St
	lie.Out = uint32((int(lie.Out) + 1) % n)
	var err error
	if lie.Sig, err = proto.Sign(f.privs[1], blame.DropStepDigest(&lie)); err != nil {
		t.Fatal(err)
	}
	if c := CheckDrop(x.ep, f.setup, f.r, 1, in, &lie); c == nil || c.Server != 1 {
		t.Fatalf("a drop step to another output: named %v", c)
	}
	if c := CheckDrop(x.ep, f.setup, f.r, 1, in, res.St); c != nil {
		t.Fatalf("an honest drop step named %v", c)
	}
}
