package evidence

import (
	"slices"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

func (f *fixture) abortOf(t *testing.T, i int, v *proto.View, kind uint8) *wire.Abort {
	t.Helper()
	a, err := SignAbort(f.ks[i].priv, f.ks[i].id, v, kind, 0, "x")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestCheckAbort: an abort counts only if a server of the chain signed it
// for the epoch's number (a coordination abort may come before it).
func TestCheckAbort(t *testing.T) {
	f := newFixture(t, 3, true)
	if err := CheckAbort(f.v, f.abort(t, 1, wire.AbortFault, 0)); err != nil {
		t.Fatalf("a chain server's abort: %v", err)
	}
	outside := keys(t, 1)[0]
	a, err := SignAbort(outside.priv, outside.id, f.v, wire.AbortFault, 0, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckAbort(f.v, a); err == nil {
		t.Fatal("an abort signed outside the chain was taken")
	}
	other := *f.v
	other.Desc = &wire.Descriptor{Number: 8}
	if err := CheckAbort(f.v, f.abortOf(t, 1, &other, wire.AbortFault)); err == nil {
		t.Fatal("an abort of another number was taken")
	}
	if err := CheckAbort(f.v, f.abortOf(t, 1, &other, wire.AbortCoord)); err != nil {
		t.Fatalf("a coordination abort of another number: %v", err)
	}
	forged := f.abort(t, 1, wire.AbortFault, 0)
	forged.Signer = []byte(f.ks[2].id)
	if err := CheckAbort(f.v, forged); err == nil {
		t.Fatal("an abort whose signature is another server's was taken")
	}
	b, err := SignAbort(f.ks[1].priv, f.ks[1].id, f.v, wire.AbortFault, 0, strings.Repeat("x", 2*wire.MaxReason))
	if err != nil || len(b.Reason) != wire.MaxReason || CheckAbort(f.v, b) != nil {
		t.Fatalf("a long reason: err %v", err)
	}
}

// TestAbortRelayedOnce (§3): a server's abort ends the epoch here and is
// relayed once, to the servers of the chain but this one, its sender and
// its signer; the same abort again ends nothing more and goes nowhere.
func TestAbortRelayedOnce(t *testing.T) {
	f := newFixture(t, 4, true)
	a := f.abort(t, 1, wire.AbortFault, 0)
	if _, _, err := f.svc.Take(f.h.ep, f.ks[2].id, a, nil); err != nil {
		t.Fatal(err)
	}
	relays := f.h.sentOf(wire.TypeAbort)
	if len(relays) != 1 || !slices.Equal(relays[0].to, f.v.Chain[3:]) {
		t.Fatalf("relays %v, want one to server 3 alone", relays)
	}
	if len(f.h.ended) != 1 || !strings.Contains(f.h.ended[0], f.ks[1].id.ShortString()) {
		t.Fatalf("ends %q, want one naming the signer", f.h.ended)
	}
	if _, _, err := f.svc.OnAbort(f.ks[3].id, a.Marshal()); err != nil {
		t.Fatal(err)
	}
	if n := len(f.h.sentOf(wire.TypeAbort)); n != 1 {
		t.Fatalf("the abort was relayed %d times", n)
	}
	if got := f.svc.Ref.RefusalCounts()[f.ks[1].id]; got != 1 {
		t.Fatalf("the signer is counted %d times, want once", got)
	}
	// An abort from outside the chain's senders ends nothing.
	bad := f.abort(t, 1, wire.AbortFault, 0)
	bad.Number++
	if _, _, err := f.svc.Take(f.h.ep, f.ks[2].id, bad, nil); err == nil {
		t.Fatal("an abort of another number was taken")
	}
}

// TestPreFinalHeld: an abort for a missing publication or list that comes
// before the final descriptor ends nothing and is held, one a signer and
// kind; the final descriptor's coming takes each once (TestAbortRacesFinal
// for the race it closes).
func TestPreFinalHeld(t *testing.T) {
	f := newFixture(t, 3, false)
	for i := range 2 {
		for _, kind := range []uint8{wire.AbortNoPub, wire.AbortNoList} {
			if _, _, err := f.svc.Take(f.h.ep, f.ks[1+i%2].id, f.abort(t, 1, kind, 2), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(f.h.ended) != 0 {
		t.Fatalf("an abort before the final descriptor ended the epoch: %q", f.h.ended)
	}
	if n := len(f.h.ep.PreFinal.m); n != 2 {
		t.Fatalf("%d aborts held, want one a kind", n)
	}
	for k, h := range f.h.ep.PreFinal.m {
		if h.from != f.ks[1].id {
			t.Fatalf("kind %d: a later copy replaced the first held", k.kind)
		}
	}
	f.h.ep.Final = f.v
	f.svc.TakePreFinal(f.h.ep)
	if len(f.h.ended) != 2 || len(f.h.ep.PreFinal.m) != 0 {
		t.Fatalf("after the final descriptor: ends %q, %d still held", f.h.ended, len(f.h.ep.PreFinal.m))
	}
	f.svc.TakePreFinal(f.h.ep)
	if len(f.h.ended) != 2 {
		t.Fatal("a held abort was taken twice")
	}
}

// TestSendBacked: this server's backed abort goes to every other server
// of the chain as evidence and counts here with its attestations.
func TestSendBacked(t *testing.T) {
	f := newFixture(t, 3, true)
	if !f.svc.SendBacked(f.h.ep, wire.AbortDown, 2, "server 2 left", nil) {
		t.Fatal("unsigned")
	}
	ch := f.h.sentOf(wire.TypeCharge)
	if len(ch) == 0 || !slices.Equal(ch[0].to, f.v.Chain[1:]) {
		t.Fatalf("evidence sent %v, want to servers 1 and 2", ch)
	}
	if f.svc.Ref.FirstSight(f.v.ID, 7, f.ks[0].id) {
		t.Fatal("this server's own abort was not noted as seen")
	}
}
