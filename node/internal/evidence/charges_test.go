package evidence

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestEpochOf: the epoch a piece of evidence is of is read from its item;
// a malformed item is refused.
func TestEpochOf(t *testing.T) {
	f := newFixture(t, 3, true)
	a := f.abort(t, 1, wire.AbortFault, 0)
	id, err := EpochOf(&wire.Charge{Kind: wire.EvAbort, Number: 7, Item: a.Marshal()})
	if err != nil || id != f.v.ID {
		t.Fatalf("abort: %x, %v", id, err)
	}
	rl := wire.RoundList{Epoch: f.v.ID, Round: 3}
	id, err = EpochOf(&wire.Charge{Kind: wire.EvVoid, Number: 7, Item: rl.Marshal()})
	if err != nil || id != f.v.ID {
		t.Fatalf("void: %x, %v", id, err)
	}
	for _, k := range []uint8{wire.EvAbort, wire.EvVoid, wire.EvEquiv, wire.EvHeld, wire.EvSilent, wire.EvForward} {
		if _, err := EpochOf(&wire.Charge{Kind: k, Number: 7, Item: []byte{1, 2, 3}}); err == nil {
			t.Errorf("kind %d: a malformed item was read", k)
		}
	}
}

// TestOnChargeOutsideRoster: evidence of an epoch not held here counts
// only from a roster server.
func TestOnChargeOutsideRoster(t *testing.T) {
	f := newFixture(t, 3, true)
	f.h.ep = nil
	ev := &wire.Charge{Kind: wire.EvAbort, Number: 7, Item: f.abort(t, 1, wire.AbortFault, 0).Marshal()}
	stranger := keys(t, 1)[0].id
	if _, _, err := f.svc.OnCharge(stranger, ev.Marshal()); err == nil {
		t.Fatal("evidence from outside the roster was taken")
	}
	if _, _, err := f.svc.OnCharge(f.ks[2].id, ev.Marshal()); err != nil {
		t.Fatalf("evidence from a roster server: %v", err)
	}
	if n := f.svc.Ref.Pending(); n != 1 {
		t.Fatalf("%d pieces of evidence wait for their certificate, want 1", n)
	}
}
