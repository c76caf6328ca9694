package handover

import (
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestQueue: at most max onions a slot (a resend of a held round does not
// count), each kept as a copy; the due ones come out in round order up to
// the first round not admitted, rounds gone by are dropped, and a slot
// with none left leaves the table. A departed slot's queries are not
// waited for.
func TestQueue(t *testing.T) {
	var q Queue
	frame := []byte{1, 2, 3}
	for r := uint32(10); r < 14; r++ {
		if err := q.Hold(wire.Submit{Slot: 5, Round: r, Onion: frame}, 4); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Hold(wire.Submit{Slot: 5, Round: 13, Onion: frame}, 4); err != nil {
		t.Fatalf("a resend of a held round: %v", err)
	}
	if err := q.Hold(wire.Submit{Slot: 5, Round: 14, Onion: frame}, 4); err == nil || !strings.Contains(err.Error(), "more than 4") {
		t.Fatalf("a fifth onion for one slot: %v", err)
	}
	frame[0] = 9
	if q.Held[5][10].Onion[0] != 1 {
		t.Fatal("the held onion aliases the frame")
	}
	if !q.Has(5, 12) || q.Has(5, 14) || q.Has(6, 10) {
		t.Fatal("Has")
	}
	due := q.Due(11, func(r uint32) bool { return r <= 12 })
	if len(due) != 2 || due[0].Round != 11 || due[1].Round != 12 {
		t.Fatalf("due: %v", due)
	}
	if q.Has(5, 10) || !q.Has(5, 13) {
		t.Fatal("a round gone by kept, or a round not admitted dropped")
	}
	if due := q.Due(0, func(uint32) bool { return true }); len(due) != 1 || len(q.Held) != 0 {
		t.Fatalf("the last one: %d due, %d slots left", len(due), len(q.Held))
	}
	if n := q.QueriesDue([]uint32{4, 5, 6}, func(sl uint32) bool { return sl == 6 }); n != 1 {
		t.Fatalf("%d slots' queries due, want 1 (5 departed, 6 dead)", n)
	}
}

// TestDropOnions: an ended epoch's held onions go, and what was held for
// which slot and round stays: Has and QueriesDue answer as before.
func TestDropOnions(t *testing.T) {
	var q Queue
	for r := uint32(3); r < 6; r++ {
		if err := q.Hold(wire.Submit{Slot: 2, Round: r, Onion: make([]byte, 1000)}, 4); err != nil {
			t.Fatal(err)
		}
	}
	q.DropOnions()
	for r := uint32(3); r < 6; r++ {
		if !q.Has(2, r) || q.Held[2][r].Onion != nil || q.Held[2][r].Round != r {
			t.Fatalf("round %d after the drop: has %v, %d onion bytes", r, q.Has(2, r), len(q.Held[2][r].Onion))
		}
	}
	if q.Has(2, 6) || q.QueriesDue([]uint32{1, 2}, func(uint32) bool { return false }) != 1 {
		t.Fatal("the drop changed what was held or who departed")
	}
}

// TestSpent (§5.4): the first slot of this primary whose client is gone
// with no onion for the next round, submitted or handed over; a
// connected client or another primary's slot is never judged.
func TestSpent(t *testing.T) {
	cl := []wire.ClientEntry{{Primary: 1, RegKey: [32]byte{0}}, {Primary: 0, RegKey: [32]byte{1}}, {Primary: 0, RegKey: [32]byte{2}}, {Primary: 0, RegKey: [32]byte{3}}}
	var q Queue
	if err := q.Hold(wire.Submit{Slot: 2, Round: 7}, 4); err != nil {
		t.Fatal(err)
	}
	gone := func(k [32]byte) bool { return k != [32]byte{3} } // slot 3 connected
	has := func(sl uint32) bool { return sl == 1 }            // slot 1 submitted
	if sl, ok := q.Spent(cl, 0, 7, has, gone); ok {
		t.Fatalf("slot %d judged spent", sl)
	}
	if sl, ok := q.Spent(cl, 0, 8, has, gone); !ok || sl != 2 {
		t.Fatalf("slot 2 without its round-8 onion: %d, %v", sl, ok)
	}
	if sl, ok := q.Spent(cl, 1, 7, has, gone); !ok || sl != 0 {
		t.Fatalf("primary 1's gone client: %d, %v", sl, ok)
	}
}
