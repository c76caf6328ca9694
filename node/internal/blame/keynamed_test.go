package blame

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestKeyNamedOnce: a slot's key is excluded once, when both its naming
// here and evidence for it are in, in either order; the primary's own
// evidence is published; evidence for a slot not named waits (the first).
func TestKeyNamedOnce(t *testing.T) {
	var k KeyNamed
	// Evidence first: it waits, the first one stands.
	first := wire.KeyEvidence{Slot: 2, LTKey: [32]byte{1}}
	if k.Evidence(first) {
		t.Fatal("evidence for a slot not named here excluded its key")
	}
	if k.Evidence(wire.KeyEvidence{Slot: 2, LTKey: [32]byte{9}}) || k.Named(2) {
		t.Fatal("a second piece of evidence, or evidence alone, named the slot")
	}
	ev, own := k.Name(2, nil)
	if ev == nil || own || ev.LTKey != first.LTKey {
		t.Fatalf("naming after evidence: %v own %v, want the first evidence", ev, own)
	}
	if ev, _ := k.Name(2, nil); ev != nil || k.Evidence(first) {
		t.Fatal("a key excluded twice")
	}

	// Named first: nothing to exclude by until evidence comes, then once.
	if ev, _ := k.Name(3, nil); ev != nil || !k.Named(3) {
		t.Fatal("naming without evidence")
	}
	if !k.Evidence(wire.KeyEvidence{Slot: 3}) || k.Evidence(wire.KeyEvidence{Slot: 3}) {
		t.Fatal("evidence after the naming: want one exclusion")
	}

	// The primary's own evidence: at once, published.
	mine := &wire.KeyEvidence{Slot: 5}
	if ev, own := k.Name(5, mine); ev != mine || !own {
		t.Fatalf("own evidence: %v %v", ev, own)
	}
	if k.Evidence(wire.KeyEvidence{Slot: 5}) {
		t.Fatal("a key excluded twice (own, then a copy)")
	}
}
