package node

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

// cheatNet starts m = 3 servers on loopback, each of which cheats as c
// says whenever it leads, and two clients per primary; the leader waits
// for all six. Each server logs warnings to its own buffer.
func cheatNet(t *testing.T, c *leaderCheat) (*anonNet, []*lockedBuf) {
	t.Helper()
	logs := make([]*lockedBuf, 3)
	tn := startAnonNet(t, 3, 6, 6, testParams(8), func(i int, sc *ServerConfig) {
		logs[i] = &lockedBuf{}
		sc.Logger = slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelWarn}))
		sc.cheat = c
	})
	return tn, logs
}

// waitLogs waits until a server's log holds every one of want.
func waitLogs(t *testing.T, logs []*lockedBuf, d time.Duration, want ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		for _, l := range logs {
			s := l.String()
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(s, w)
			}
			if ok {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var all []string
	for _, l := range logs {
		all = append(all, l.String())
	}
	t.Fatalf("no server logged %q:\n%s", want, strings.Join(all, "\n---\n"))
	return ""
}

// noFinal checks that no server holds a final descriptor.
func noFinal(t *testing.T, tn *anonNet) {
	t.Helper()
	for i, s := range tn.servers {
		s.mu.Lock()
		for _, e := range s.epochs {
			if e.final != nil {
				s.mu.Unlock()
				t.Fatalf("server %d took a final descriptor from a cheating leader", i)
			}
		}
		s.mu.Unlock()
	}
}

// TestLeaderReordersOrder checks §3 (v3) "signed orders": a leader that
// passes on a primary's list in another order than the primary signed is
// refused by the other servers before any registration's proofs, and no
// final descriptor is signed.
func TestLeaderReordersOrder(t *testing.T) {
	tn, logs := cheatNet(t, &leaderCheat{list: func(rl *wire.RegList) {
		for i := range rl.Orders {
			if k := rl.Orders[i].Keys; len(k) >= 2 {
				k[0], k[1] = k[1], k[0]
				return
			}
		}
	}})
	out := waitLogs(t, logs, 40*time.Second, "epoch failed", "not signed by it")
	if !strings.Contains(out, "order of primary") {
		t.Fatalf("refused for another reason: %s", out)
	}
	noFinal(t, tn)
}
