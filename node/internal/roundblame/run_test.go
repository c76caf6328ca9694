package roundblame

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// runAll runs the blame of each node of the chain at once, as every
// server does.
func runAll(nodes []*node, abort bool) {
	var wg sync.WaitGroup
	for _, x := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.svc.Run(x.ep, x.bl, abort)
		}()
	}
	wg.Wait()
}

// TestRunDropsNamedSlot: a bad payload's walk names its client at every
// server; each reveals the slot's route forward, records it dead from
// S_0's input to the last output, settles with the slot dropped and the
// epoch running, and only S_0 has the round signed void.
func TestRunDropsNamedSlot(t *testing.T) {
	t.Parallel()
	const m, n = 3, 4
	f := newEpoch(t, m, n)
	const slot = 2
	q := f.final[slot]
	nodes, hosts := f.chain(func() *Blame { return NewPayload(f.r, m, q, f.inputs[m][q]) })
	for _, h := range hosts {
		h.users = 1 // the start took the secrets
	}
	runAll(nodes, false)
	for s, h := range hosts {
		x := nodes[s]
		if len(h.named) != 1 || h.named[0].Server != -1 || h.named[0].Slot != slot {
			t.Fatalf("server %d named %v", s, h.named)
		}
		if h.ended || !x.bl.Settled || !x.bl.Dropped || h.users != 0 || h.forwarded != 1 {
			t.Fatalf("server %d: ended %v (%s), settled %v, dropped %v, secrets held %d, forwarded %d", s, h.ended, h.endReason, x.bl.Settled, x.bl.Dropped, h.users, h.forwarded)
		}
		if !x.blames.IsDead(slot) || !slices.Equal(x.blames.DeadIn(0), []int{slot}) || !slices.Equal(x.blames.DeadIn(m), []int{q}) {
			t.Fatalf("server %d: dead at the input %v, at the output %v; want %d, %d", s, x.blames.DeadIn(0), x.blames.DeadIn(m), slot, q)
		}
		if want := s == 0; (len(h.voided) == 1) != want || (h.lists == m) != want {
			t.Fatalf("server %d had the round signed void: %v, lists delivered %d", s, h.voided, h.lists)
		}
		if !h.roundVoid[f.r] {
			t.Fatalf("server %d did not sign the blamed round void", s)
		}
	}
}

// TestRunEndsEpochOnServer: a walk that names a server ends the epoch
// at every server, quietly unless it is to tell the others, with no slot
// dead and the secrets given back.
func TestRunEndsEpochOnServer(t *testing.T) {
	t.Parallel()
	const m, n = 3, 3
	f := newEpoch(t, m, n)
	a := f.accuse(t, 2, 0) // a false accusation
	for _, abort := range []bool{false, true} {
		nodes, hosts := f.chain(func() *Blame { return NewAccused(f.r, a) })
		for _, h := range hosts {
			h.users = 1 // the start took the secrets
		}
		runAll(nodes, abort)
		for s, h := range hosts {
			x := nodes[s]
			if len(h.named) != 1 || h.named[0].Server != 2 {
				t.Fatalf("server %d named %v", s, h.named)
			}
			if !h.ended || h.abortSent != abort || h.endReason != "round blame done" || !x.bl.Settled || x.bl.Dropped || x.blames.IsDead(0) || h.users != 0 {
				t.Fatalf("server %d: ended %v (%s, abort %v), settled %v, dropped %v, secrets %d", s, h.ended, h.endReason, h.abortSent, x.bl.Settled, x.bl.Dropped, h.users)
			}
		}
	}
}

// TestOnAccuseStartsOnce: an accusation starts the walk at a server that
// takes it from its accuser, one blame an epoch; one sent by another
// server is refused.
func TestOnAccuseStartsOnce(t *testing.T) {
	t.Parallel()
	const m, n = 3, 3
	f := newEpoch(t, m, n)
	a := f.accuse(t, 2, 1)
	nodes, hosts := f.chain(func() *Blame { return nil })
	x, h := nodes[0], hosts[0]
	if _, _, err := x.svc.OnAccuse(f.v.Chain[1], a.Marshal()); err == nil || !strings.Contains(err.Error(), "not from its accuser") {
		t.Fatalf("an accusation handed on by another server: %v", err)
	}
	if _, _, err := x.svc.OnAccuse(f.v.Chain[2], a.Marshal()); err != nil {
		t.Fatal(err)
	}
	h.goroutines.Wait()
	bl := x.blames.Of(f.r)
	if bl == nil || len(h.named) != 1 || h.named[0].Server != 2 || !h.ended || h.users != 0 {
		t.Fatalf("blame %v, named %v, ended %v, secrets %d", bl, h.named, h.ended, h.users)
	}
	if _, _, err := x.svc.OnAccuse(f.v.Chain[2], a.Marshal()); err != nil {
		t.Fatal(err)
	}
	h.goroutines.Wait()
	if len(h.named) != 1 {
		t.Fatalf("a second accusation walked again: %v", h.named)
	}
	var other [32]byte
	if _, _, err := x.svc.OnAccuse(peer.ID(""), other[:]); err == nil {
		t.Fatal("an accusation of an unknown epoch")
	}
}

// TestDropDoubleOnce: a second onion kills its slot without a walk, and
// the round stays (not signed void); a second one of a dead slot starts
// nothing, and one while another blame runs ends the epoch.
func TestDropDoubleOnce(t *testing.T) {
	t.Parallel()
	const m, n = 2, 3
	f := newEpoch(t, m, n)
	nodes, hosts := f.chain(func() *Blame { return nil })
	d := wire.DoubleSubmit{Epoch: f.v.ID, Round: f.r, Slot: 1}
	var wg sync.WaitGroup
	for _, x := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.svc.DropDouble(x.ep, d)
		}()
	}
	wg.Wait()
	for s, h := range hosts {
		x := nodes[s]
		if !x.blames.IsDead(1) || h.ended || len(h.voided) != 0 || h.users != 0 || len(h.named) != 0 {
			t.Fatalf("server %d: dead %v, ended %v, voided %v, secrets %d, named %v", s, x.blames.IsDead(1), h.ended, h.voided, h.users, h.named)
		}
	}
	x, h := nodes[0], hosts[0]
	x.svc.DropDouble(x.ep, d)
	if h.ended || len(x.blames.DeadIn(0)) != 1 {
		t.Fatalf("a dead slot's second onion: ended %v, dead %v", h.ended, x.blames.DeadIn(0))
	}
	x.blames.Start(NewPayload(0, m, 0, nil))
	x.svc.DropDouble(x.ep, wire.DoubleSubmit{Epoch: f.v.ID, Round: f.r, Slot: 2})
	if !h.ended || !h.abortSent || x.blames.IsDead(2) {
		t.Fatalf("a second onion while a walk runs: ended %v (%s)", h.ended, h.endReason)
	}
}

// TestSignVoidOnlyDropped: a server signs a blame void only of a round a
// walk blamed here whose slot it dropped; a second onion's round, a
// round not blamed, an ordinary void and a blame that ended the epoch
// get no signature.
func TestSignVoidOnlyDropped(t *testing.T) {
	t.Parallel()
	f := newEpoch(t, 2, 2)
	ctx := context.Background()
	blamed := &wire.RoundList{Epoch: f.v.ID, Round: f.r, Flags: wire.ListVoid | wire.ListBlame}
	nodes, hosts := f.chain(func() *Blame { return NewPayload(f.r, 2, 0, nil) })
	x, h := nodes[1], hosts[1]
	if handled, _, _, _ := x.svc.SignVoid(ctx, x.ep, &wire.RoundList{Epoch: f.v.ID, Round: f.r, Flags: wire.ListVoid}); handled {
		t.Fatal("an ordinary void taken as a blame void")
	}
	if _, _, _, err := x.svc.SignVoid(ctx, x.ep, &wire.RoundList{Epoch: f.v.ID, Round: 0, Flags: wire.ListVoid | wire.ListBlame}); err == nil {
		t.Fatal("a blame void of a round not blamed here signed")
	}
	x.bl.Settled = true
	if _, _, _, err := x.svc.SignVoid(ctx, x.ep, blamed); err == nil || h.roundVoid[f.r] {
		t.Fatal("a blame void signed whose slot was not dropped")
	}
	x.bl.Dropped = true
	h.ended = true
	if _, _, _, err := x.svc.SignVoid(ctx, x.ep, blamed); err == nil || h.roundVoid[f.r] {
		t.Fatal("a blame void signed after the epoch ended")
	}
	h.ended = false
	if _, typ, body, err := x.svc.SignVoid(ctx, x.ep, blamed); err != nil || typ != wire.TypeSig || len(body) == 0 || !h.roundVoid[f.r] {
		t.Fatalf("a dropped slot's blame void: %v", err)
	}
	nodes, _ = f.chain(func() *Blame {
		bl := NewDouble(f.r)
		bl.Settled, bl.Dropped = true, true
		return bl
	})
	if _, _, _, err := nodes[1].svc.SignVoid(ctx, nodes[1].ep, blamed); err == nil {
		t.Fatal("a second onion's round signed void")
	}
}
