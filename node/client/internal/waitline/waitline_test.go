package waitline

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestReason: what a client in no epoch says it waits for follows from
// its last failed attempt, the primary's last answer on the group's state
// (while fresh), its own registration and its last epoch.
func TestReason(t *testing.T) {
	now := time.Unix(1e6, 0)
	fresh, stale := now.Add(-time.Second), now.Add(-StateFresh-time.Second)
	rounds := wire.State{Phase: wire.PhaseRounds, Number: 7, Done: 3, Rounds: 10, RoundMillis: 1000}
	open := wire.State{Phase: wire.PhaseOpen, Number: 8, Registered: 1, MinClients: 2}
	idle := wire.State{Phase: wire.PhaseIdle, Live: 1, MinServers: 3, SinceEnd: wire.NoEnd}
	for _, tc := range []struct {
		name string
		b    Between
		want string // a part of the line; "" for none
	}{
		{"nothing known", Between{}, Hint},
		{"a failed attempt", Between{Waiting: "no epoch: timeout; retrying"}, "timeout"},
		{"a refusal beats the state", Between{Waiting: "no epoch: refused x; retrying", State: rounds, StateAt: fresh}, "refused x"},
		{"epoch running", Between{State: rounds, StateAt: fresh}, "epoch 7 is running at the primary (round 3 of 10, about 7s left)"},
		{"stale state", Between{Waiting: "no epoch: timeout; retrying", State: rounds, StateAt: stale}, "timeout"},
		{"the epoch taken part in", Between{State: rounds, StateAt: fresh, TookPart: 7}, ""},
		{"its own registration, short of clients", Between{State: open, StateAt: fresh, Joining: 8}, "registered in epoch 8"},
		{"another's registration", Between{State: open, StateAt: fresh}, "epoch 8 is open for registrations"},
		{"short of servers", Between{State: idle, StateAt: fresh}, "the primary sees 1 of the 3 servers"},
		{"just after an epoch", Between{EpochEnd: now.Add(-time.Second)}, ""},
	} {
		got := tc.b.Reason(now)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestLine(t *testing.T) {
	if got := Line(errors.New("node: dial: no route\nall addresses")); got != "no epoch: dial: no route; retrying" {
		t.Errorf("Line: %q", got)
	}
	if RoundUp(90*time.Second+400*time.Millisecond) != 90*time.Second || RoundUp(150*time.Second) != 3*time.Minute {
		t.Error("RoundUp")
	}
}
