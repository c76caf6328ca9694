//go:build riffletest

package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/pir"
)

// TestGroupCost checks GroupCost's round against the encodings
// (docs/proto-node.md: a frame is a 5-byte header and its body), with the
// index's share of a round (manifests.go: its cap per R rounds), and its
// shape: the worst case is at least the idle figure, and a pace twice as
// slow halves what rounds cost.
func TestGroupCost(t *testing.T) {
	p := DefaultParams()
	c := GroupCost(p)
	b, k, m, L := int64(p.ChunkSize), int64(p.K), int64(MaxGroupServers), int(p.MaxRows)
	submit := 5 + 32 + 4 + 4 + 4 + int64(mix.OnionSize(int(b), int(k), int(m))) + 64
	waitList := int64(5 + 32 + 4 + 4)
	query := 5 + 32 + 4 + 4 + 4 + 4 + k*(4+int64(pir.MaskBytes(L)))
	// A checkpoint's page request and reply header, spread over the rounds.
	cps := int64(len(proto.Checkpoints(p.Rounds, p.RoundIntervalMs, uint32(p.W))))
	R := int64(p.Rounds)
	if want := submit + waitList + query + (cps*(5+8)+R-1)/R; c.Round.Send != want {
		t.Fatalf("a round sends %d bytes, want %d", c.Round.Send, want)
	}
	answer := 5 + 32 + 4 + 4 + 4 + 4 + k*(4+b)
	list := 5 + 32 + 4 + 4 + int64(L)*36 + 2*(4+int64(p.MaxClients)*32) + 1 + 4 + int64(p.MaxClients)*k*8 + 4 + m*64
	// The index's share: the cap's chunks per R rounds, rounded up.
	index := (int64(proto.IndexCap(int(p.MaxClients), p.ChunkSize))*(b+64) + int64(p.Rounds) - 1) / int64(p.Rounds)
	if want := 5 + answer + list + index + (cps*5+R-1)/R; c.Round.Recv != want {
		t.Fatalf("a round receives %d bytes, want %d", c.Round.Recv, want)
	}
	if c.Worst.SendPerHour < c.Idle.SendPerHour || c.Worst.RecvPerHour < c.Idle.RecvPerHour {
		t.Fatalf("worst case %+v below the idle figure %+v", c.Worst, c.Idle)
	}
	// Idle at the pace: R rounds in a window and R−1 intervals.
	epoch := time.Duration(p.RegWindowMs)*time.Millisecond + time.Duration(p.Rounds-1)*time.Duration(p.RoundIntervalMs)*time.Millisecond
	want := float64(c.Epoch.Send+int64(p.Rounds)*c.Round.Send) * float64(time.Hour) / float64(epoch)
	if d := c.Idle.SendPerHour - want; d > 1 || d < -1 {
		t.Fatalf("idle %f bytes/h sent, want %f", c.Idle.SendPerHour, want)
	}
	slow := p
	slow.RoundIntervalMs *= 2
	if s := GroupCost(slow); s.Idle.SendPerHour >= 0.6*c.Idle.SendPerHour || s.Worst.Max() > c.Worst.Max() {
		t.Fatalf("a pace twice as slow: idle %f → %f bytes/h, worst %f → %f bytes/s", c.Idle.SendPerHour, s.Idle.SendPerHour, c.Worst.Max(), s.Worst.Max())
	}
	// A server moves more than one of its clients.
	if s := ServerCost(p, 64, 3); s.SendPerHour < c.Idle.RecvPerHour || s.RecvPerHour < c.Idle.SendPerHour {
		t.Fatalf("server %+v, client %+v", s, c.Idle)
	}
}

// TestGroupCostHolds runs a small network in virtual time and checks
// that what a client measured (every request and reply) stays within
// its group's worst case, and the budget check: a client whose MaxRate
// is under that figure stops with ErrOverBudget before it registers,
// one above it runs.
func TestGroupCostHolds(t *testing.T) {
	t.Parallel()
	long(t) // whole networks over many epochs: the full pass runs it, the race pass would take half a minute
	virtual(t, func(t *testing.T) {
		// Epochs long enough that their rounds, not their setups, make
		// what a client moves.
		p := testParams(32)
		p.RoundIntervalMs = 200
		worst := GroupCost(p).Worst
		tn := startAnonNet(t, 3, 3, 3, p, nil)
		deadline := time.Now().Add(5 * time.Minute)
		if err := wait.UntilEvery(context.Background(), time.Until(deadline), 100*time.Millisecond, func() bool { return tn.clients[0].Stats().Rounds >= 2*int(p.Rounds) }); err != nil {
			t.Fatal("rounds did not run")
		}
		st := tn.clients[0].Status()
		if st.SentPerHour <= 0 || st.SentPerHour > worst.SendPerHour || st.RecvPerHour > worst.RecvPerHour {
			t.Fatalf("measured %.0f B/h sent, %.0f B/h received; the group's worst case %.0f and %.0f", st.SentPerHour, st.RecvPerHour, worst.SendPerHour, worst.RecvPerHour)
		}
		if st.GroupSendPerHour != worst.SendPerHour || st.GroupRecvPerHour != worst.RecvPerHour {
			t.Fatalf("status gives %.0f and %.0f B/h, GroupCost %.0f and %.0f", st.GroupSendPerHour, st.GroupRecvPerHour, worst.SendPerHour, worst.RecvPerHour)
		}
		t.Logf("measured %.1f MiB/h sent, %.1f MiB/h received; worst case %.1f and %.1f", st.SentPerHour/(1<<20), st.RecvPerHour/(1<<20), worst.SendPerHour/(1<<20), worst.RecvPerHour/(1<<20))

		addr := tn.servers[0].Addrs()[0].String()
		low, err := NewClient(context.Background(), ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: addr, MaxRate: worst.Max() * 0.99, Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer low.Close()
		select {
		case <-low.Done():
		case <-time.After(time.Minute):
			t.Fatal("a client over its budget did not stop")
		}
		if err := low.Err(); !errors.Is(err, ErrOverBudget) || low.Stats().Epochs != 0 {
			t.Fatalf("client over budget: err %v after %d epochs", err, low.Stats().Epochs)
		}
		high, err := NewClient(context.Background(), ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: addr, MaxRate: worst.Max() * 1.01, Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer high.Close()
		if err := wait.UntilEvery(context.Background(), time.Until(deadline), 100*time.Millisecond, func() bool { return high.Stats().Epochs != 0 || high.Err() != nil }); err != nil || high.Err() != nil {
			t.Fatalf("a client within its budget took no epoch: %v", high.Err())
		}
	})
}
