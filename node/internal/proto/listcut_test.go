package proto

import (
	"bytes"
	"testing"
)

func idOf(b byte) (id [32]byte) { id[0] = b; return }

// TestRoundRobinCut: one pseudonym asking for many ids cannot push the
// others' first requests out of a full list; the cut is sorted and takes
// no id twice; ids nobody holds are skipped.
func TestRoundRobinCut(t *testing.T) {
	virtual(t, func(t *testing.T) {
		greedy := [][32]byte{idOf(1), idOf(2), idOf(3), idOf(4), idOf(5)}
		byPos := [][][32]byte{greedy, {idOf(9)}, {idOf(8), idOf(1)}, nil}
		all := func([32]byte) bool { return true }
		got := RoundRobinCut(0, byPos, all, 3)
		want := [][32]byte{idOf(1), idOf(8), idOf(9)}
		if len(got) != len(want) {
			t.Fatalf("cut %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("cut %d = %x, want %x", i, got[i][:1], want[i][:1])
			}
		}
		// The sorted-first cut this replaces would have kept 1, 2, 3: the
		// greedy position's ids alone.
		// From q0 = 2: position 2 takes 8, 3 nothing, 0 takes 1, 1 takes 9.
		if got := RoundRobinCut(2, byPos, all, 2); got[0] != idOf(1) || got[1] != idOf(8) {
			t.Fatalf("cut from q0=2: %x %x", got[0][:1], got[1][:1])
		}
		// Unheld ids are skipped, a repeated id taken once, no limit reached.
		notTwo := func(id [32]byte) bool { return id != idOf(2) }
		got = RoundRobinCut(0, byPos, notTwo, 100)
		if len(got) != 6 {
			t.Fatalf("cut without limit has %d ids, want 6 (1 3 4 5 8 9)", len(got))
		}
		for i := 1; i < len(got); i++ {
			if bytes.Compare(got[i-1][:], got[i][:]) >= 0 {
				t.Fatal("cut not sorted or repeats an id")
			}
		}
	})
}

// TestRoundRobinCutSubset: the cut run over the list plus any ids of
// the held set gives the list again (the holder's check of §5.3).
func TestRoundRobinCutSubset(t *testing.T) {
	virtual(t, func(t *testing.T) {
		byPos := [][][32]byte{{idOf(1), idOf(2), idOf(3)}, {idOf(4), idOf(2)}, {idOf(5), idOf(6)}, {idOf(7)}}
		heldAll := map[[32]byte]bool{idOf(1): true, idOf(2): true, idOf(3): true, idOf(4): true, idOf(6): true, idOf(7): true}
		list := RoundRobinCut(1, byPos, func(id [32]byte) bool { return heldAll[id] }, 4)
		in := map[[32]byte]bool{}
		for _, id := range list {
			in[id] = true
		}
		for extra := range heldAll {
			sub := map[[32]byte]bool{extra: true}
			for id := range in {
				sub[id] = true
			}
			again := RoundRobinCut(1, byPos, func(id [32]byte) bool { return sub[id] }, 4)
			if len(again) != len(list) {
				t.Fatalf("with %x: %d ids, want %d", extra[:1], len(again), len(list))
			}
			for i := range list {
				if again[i] != list[i] {
					t.Fatalf("with %x the cut differs", extra[:1])
				}
			}
		}
		if q := ListStart([32]byte{1}, 7, 10); q < 0 || q >= 10 {
			t.Fatalf("start %d out of range", q)
		}
		if ListStart([32]byte{1}, 7, 1000) == ListStart([32]byte{1}, 8, 1000) && ListStart([32]byte{1}, 9, 1000) == ListStart([32]byte{1}, 10, 1000) {
			t.Fatal("start does not depend on the round")
		}
	})
}
