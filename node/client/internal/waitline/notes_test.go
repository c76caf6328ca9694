package waitline

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestNotes: jobs hold in an epoch whose trusted anonymity set is below the
// minimum, else the presence line decides, given the last epoch's length;
// between epochs the line is Between's of the notes; a wait reason is
// said once until it changes, and an epoch's start clears it.
func TestNotes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNotes(5)
		n.SetTrusted(4)
		if got := n.Reason(true, func(time.Duration) string { return "presence" }); !n.Hold() || !strings.Contains(got, "below the minimum of 5") {
			t.Fatalf("trusted 4 of 5: hold %v, %q", n.Hold(), got)
		}
		n.SetTrusted(5)
		n.Begin(7, 10, 3)
		time.Sleep(time.Minute)
		n.Ended()
		var passed time.Duration
		if got := n.Reason(true, func(d time.Duration) string { passed = d; return "presence" }); n.Hold() || got != "presence" || passed != time.Minute || n.EpochLen() != time.Minute {
			t.Fatalf("trusted 5 of 5: hold %v, %q, epoch length %v passed, %v kept", n.Hold(), got, passed, n.EpochLen())
		}
		if at, r0, m0 := n.Started(); r0 != 10 || m0 != 3 || at.IsZero() {
			t.Fatalf("started at %v, rounds %d, moved %d", at, r0, m0)
		}
		if !n.SetWait("no epoch") || n.SetWait("no epoch") {
			t.Fatal("a wait reason not said exactly once")
		}
		n.Join(9)
		want := (&Between{Waiting: "no epoch", EpochEnd: time.Now(), Joining: 9, TookPart: 7}).Reason(time.Now())
		if got := n.Reason(false, nil); got != want {
			t.Fatalf("between epochs: %q, want %q", got, want)
		}
		n.Begin(9, 0, 0)
		if !n.SetWait("no epoch") {
			t.Fatal("an epoch's start did not clear the wait reason")
		}
	})
}
