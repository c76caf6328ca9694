//go:build riffletest

package hooks

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// zeros passes the coin of ρ and draws the first id.
func zeros() *bytes.Reader { return bytes.NewReader(make([]byte, 64)) }

// TestOwnPoolAdmitsPublished: the old rule's pool takes an epoch's pairs
// only on its closing record, and of them only the pairs of rounds the
// record shows published with the list this client checked.
func TestOwnPoolAdmitsPublished(t *testing.T) {
	h := &Hooks{Config: Config{Observe: &ClientObserver{OwnDecoys: true}}}
	ep, a, b := [32]byte{1}, [32]byte{2}, [32]byte{3}
	l0 := &wire.RoundList{Epoch: ep, Round: 0, Entries: []wire.ListEntry{{ID: a}}, Pairs: []wire.ListPair{{Pos: 0, Entry: 0}}}
	l1 := &wire.RoundList{Epoch: ep, Round: 1, Entries: []wire.ListEntry{{ID: b}}, Pairs: []wire.ListPair{{Pos: 0, Entry: 0}}}
	OwnNote(h, l0)
	OwnNote(h, l1)
	OwnEnd(h, &proto.View{ID: ep}, 4)
	draw := HeldDraw(h)
	if draw == nil {
		t.Fatal("no draw with OwnDecoys")
	}
	if _, ok := draw(zeros()); ok {
		t.Fatal("a draw before the epoch's closing record")
	}
	h.mu.Lock()
	h.own.pool.admit(&wire.Closing{Epoch: ep, Rounds: []wire.ClosingRound{
		{State: wire.ClosedPublished, List: proto.ListDigest(l0)},
		{State: wire.ClosedPublished, List: [32]byte{9}}, // another list than the one checked
	}})
	size := h.own.pool.size
	h.mu.Unlock()
	if size != 1 {
		t.Fatalf("pool of %d pairs, want round 0's one", size)
	}
	if id, ok := draw(zeros()); !ok || id != a {
		t.Fatalf("draw %x %v, want round 0's id", id[:2], ok)
	}
}

// TestHeldDraw: the negative control draws from the chunks noted as held,
// and notes none without HeldDecoys.
func TestHeldDraw(t *testing.T) {
	off := &Hooks{}
	NoteHeld(off, [32]byte{1})
	if HeldDraw(off) != nil || len(off.held) != 0 {
		t.Fatal("a held draw without HeldDecoys")
	}
	h := &Hooks{Config: Config{Observe: &ClientObserver{HeldDecoys: true}}}
	if _, ok := HeldDraw(h)(zeros()); ok {
		t.Fatal("a draw with nothing held")
	}
	NoteHeld(h, [32]byte{7})
	if id, ok := HeldDraw(h)(zeros()); !ok || id != [32]byte{7} {
		t.Fatalf("draw %x %v", id[:1], ok)
	}
	odd := bytes.NewReader([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	if _, ok := HeldDraw(h)(odd); ok {
		t.Fatal("a draw past the coin of ρ")
	}
}

func TestDupAnswers(t *testing.T) {
	for _, tc := range []struct {
		d           *DupClientTest
		holds, want bool
	}{
		{nil, true, true}, {nil, false, false},
		{&DupClientTest{Answer: DupSilent}, true, false},
		{&DupClientTest{Answer: DupForge}, false, true},
	} {
		h := &Hooks{Config: Config{DupTest: tc.d}}
		if got := DupAnswers(h, tc.holds); got != tc.want {
			t.Errorf("%+v, holds %v: %v", tc.d, tc.holds, got)
		}
	}
}

// TestSecondOnion: a second, different onion for the same round and slot,
// validly signed, and the first left as it was.
func TestSecondOnion(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sub := &wire.Submit{Epoch: [32]byte{1}, Round: 3, Slot: 2, Onion: []byte{5, 6}}
	h := &Hooks{}
	if SecondOnion(h, sub, key) != nil {
		t.Fatal("a second onion without the hook")
	}
	h.Misbehave.Store(&ClientHooks{SecondOnion: func(epoch [32]byte, r, slot uint32) bool { return r == 3 && slot == 2 }})
	o := SecondOnion(h, sub, key)
	if o == nil || bytes.Equal(o.Onion, sub.Onion) || sub.Onion[0] != 5 || o.Round != 3 || o.Slot != 2 {
		t.Fatalf("second onion %+v of %+v", o, sub)
	}
	if err := mix.VerifySubmission(pub, mix.EpochID(o.Epoch), uint64(o.Round), o.Slot, o.Onion, o.Sig[:]); err != nil {
		t.Fatalf("second onion's signature: %v", err)
	}
}

// TestIndexClosingBounded: the old rule keeps at most 64 records, the
// oldest dropped first, and turns to other servers while an epoch it
// wants lacks one.
func TestIndexClosingBounded(t *testing.T) {
	h := &Hooks{Config: Config{Observe: &ClientObserver{OwnDecoys: true}}}
	for i := 0; i < 70; i++ {
		rec := wire.Closing{Epoch: [32]byte{byte(i)}}
		IndexClosing(h, rec.Marshal())
	}
	if len(h.own.closings) != 64 || h.own.closings[[32]byte{5}] != nil || h.own.closings[[32]byte{69}] == nil {
		t.Fatalf("%d records kept", len(h.own.closings))
	}
	h.own.others = [][32]byte{{69}}
	if OwnFallback(h) {
		t.Fatal("asks other servers for a record it holds")
	}
	h.own.others = [][32]byte{{1}}
	if !OwnFallback(h) {
		t.Fatal("does not ask other servers for a record it lacks")
	}
}
