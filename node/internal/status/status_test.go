package status

import (
	"testing"
	"time"
)

// TestRosterJoinedLeft: each sample says who came and who went since the
// last, once.
func TestRosterJoinedLeft(t *testing.T) {
	var w Watch
	j, l := w.Roster(map[string]string{"a": "alice", "b": "bob"})
	if len(j) != 2 || len(l) != 0 {
		t.Fatalf("first sample: joined %v left %v", j, l)
	}
	j, l = w.Roster(map[string]string{"b": "bob", "c": "carol"})
	if len(j) != 1 || j["c"] != "carol" || len(l) != 1 || l["a"] != "alice" {
		t.Fatalf("second sample: joined %v left %v, want carol in, alice out", j, l)
	}
	if j, l = w.Roster(map[string]string{"b": "bob", "c": "carol"}); len(j)+len(l) != 0 {
		t.Fatalf("same roster: joined %v left %v", j, l)
	}
}

// TestRateFromFirstSeen: the round time and throughput count only the
// rounds seen after the epoch's first sample, and a new epoch starts
// afresh.
func TestRateFromFirstSeen(t *testing.T) {
	var w Watch
	t0 := time.Unix(1000, 0)
	e1, e2 := [32]byte{1}, [32]byte{2}
	w.Rounds(e1, 5, t0) // five rounds before the watch began: not timed
	if d, tp := w.Rate(e1, 4, 100); d != 0 || tp != 0 {
		t.Fatalf("no round seen yet: %v %v", d, tp)
	}
	w.Rounds(e1, 5, t0.Add(time.Second))   // no new round: not a change
	w.Rounds(e1, 9, t0.Add(2*time.Second)) // four rounds in 2 s
	w.Rounds(e1, 9, t0.Add(5*time.Second))
	d, tp := w.Rate(e1, 4, 100)
	if d != 500*time.Millisecond || tp != 4*4*100/2.0 {
		t.Fatalf("rate %v %v, want 500ms and 800 B/s", d, tp)
	}
	if d, _ := w.Rate(e2, 4, 100); d != 0 {
		t.Fatalf("another epoch's rate %v", d)
	}
	w.Rounds(e2, 3, t0.Add(6*time.Second))
	if d, _ := w.Rate(e2, 4, 100); d != 0 {
		t.Fatalf("a new epoch kept the old timing: %v", d)
	}
}
