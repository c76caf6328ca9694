package evidence

import (
	"crypto/rand"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// keyFixture is a final epoch of two slots, and the long-term key of the
// client in slot 1 with its evidence.
func keyFixture(t *testing.T) (*fixture, wire.KeyEvidence) {
	t.Helper()
	f := newFixture(t, 3, true)
	f.v.Desc.Clients = []wire.ClientEntry{{RegKey: [32]byte{1}}, {RegKey: [32]byte{2}, Primary: 1}}
	lt, err := proto.NewLongTermKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return f, wire.KeyEvidence{Epoch: f.v.ID, Slot: 1, LTKey: lt.Public(), LTSig: lt.Sign(f.v.ID, [32]byte{2})}
}

// TestKeyEvidenceChecked (§8 "After a blame"): key evidence counts only
// for a slot of the epoch and with the key's signature over the epoch id
// and that slot's registration key.
func TestKeyEvidenceChecked(t *testing.T) {
	f, ev := keyFixture(t)
	if err := CheckKeyEvidence(f.v, &ev); err != nil {
		t.Fatalf("genuine evidence: %v", err)
	}
	other := ev
	other.Slot = 0 // another slot's registration key
	beyond := ev
	beyond.Slot = 2
	forged := ev
	forged.LTSig[0] ^= 1
	for name, x := range map[string]wire.KeyEvidence{"another slot": other, "a slot beyond the epoch's": beyond, "a forged signature": forged} {
		if err := CheckKeyEvidence(f.v, &x); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}

// TestKeyExcludedOnceNamed: a chain server's key evidence for a slot this
// server has not named is kept and excludes nobody; once the slot is
// named here the key is excluded. Evidence from outside the chain is
// refused.
func TestKeyExcludedOnceNamed(t *testing.T) {
	f, ev := keyFixture(t)
	stranger := keys(t, 1)[0].id
	if _, _, err := f.svc.OnKeyEvidence(stranger, ev.Marshal()); err == nil {
		t.Fatal("key evidence from outside the chain was taken")
	}
	if _, _, err := f.svc.OnKeyEvidence(f.ks[1].id, ev.Marshal()); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.svc.Keys.Excluded(ev.LTKey, 8); ok {
		t.Fatal("the key is excluded before this server named its slot")
	}
	f.svc.ClientNamed(f.h.ep, 1)
	if until, ok := f.svc.Keys.Excluded(ev.LTKey, 8); !ok || until <= 7 {
		t.Fatalf("after the slot was named here: excluded %v until %d", ok, until)
	}
	if n := len(f.h.sentOf(wire.TypeKeyEvidence)); n != 0 {
		t.Fatalf("a server not the slot's primary sent its key evidence %d times", n)
	}
}
