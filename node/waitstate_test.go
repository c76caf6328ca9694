//go:build riffletest

package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
)

// TestWaitSaysWhy (issue 27 point 4): a client in no epoch says what it
// waits for from its primary's state (wire.State): servers when the chain
// is short, clients when too few wait, and the running epoch, with its
// round and about how long is left, when it joins between two epochs.
func TestWaitSaysWhy(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		saysSoon := func(c *Client, wants ...string) {
			t.Helper()
			var last string
			err := wait.Until(ctx, 30*time.Second, func() bool {
				last = c.WaitReason()
				for _, w := range wants {
					if !strings.Contains(last, w) {
						return false
					}
				}
				return true
			})
			if err != nil {
				t.Fatalf("the client never said %q; it said %q", strings.Join(wants, " … "), last)
			}
		}

		// Two servers where a chain needs three.
		short := startAnonNet(t, 2, 1, 1, testParams(8), func(_ int, c *ServerConfig) { c.MinServers = 3 })
		saysSoon(short.clients[0], "waiting for servers", "2 of the 3 servers")

		// Three servers, one client where an epoch needs two.
		tn := startAnonNet(t, 3, 1, 2, testParams(64), nil)
		saysSoon(tn.clients[0], "waiting for clients", "at least 2 clients")

		// A second client: epochs run. A third joins while one runs.
		second, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer second.Close()
		until(t, ctx, time.Minute, func() bool {
			st := tn.clients[0].Status()
			return st.Epoch != "" && st.EpochRounds >= 2
		}, "no epoch ran")
		third, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[0].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer third.Close()
		saysSoon(third, "waiting for the next epoch: epoch ", "is running at the primary (round ", " of 64, about ", "left); this client joins the one after it")
		// The status the CLI and the web UI show says the same.
		if st := third.Status(); st.Epoch == "" && !strings.Contains(st.Waiting, "is running at the primary") && !strings.Contains(st.Waiting, "open for registrations") {
			t.Errorf("status waiting %q", st.Waiting)
		}
	})
}

// TestStateRejects: a State that describes no possible group is refused.
func TestStateRejects(t *testing.T) {
	good := wire.State{Live: 3, MinServers: 3, MinClients: 2, Phase: wire.PhaseRounds, Number: 4, Done: 3, Rounds: 8, RoundMillis: 100, SinceEnd: wire.NoEnd}
	var back wire.State
	if err := back.Unmarshal(good.Marshal()); err != nil || back != good {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	for name, bad := range map[string]wire.State{
		"phase":      {Phase: 9},
		"done>total": {Phase: wire.PhaseRounds, Done: 9, Rounds: 8},
		"idle epoch": {Phase: wire.PhaseIdle, Number: 3},
	} {
		if err := back.Unmarshal(bad.Marshal()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := back.Unmarshal(append(good.Marshal(), 0)); err == nil {
		t.Error("a byte more: accepted")
	}
}
