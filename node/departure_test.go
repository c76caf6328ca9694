//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestClientCrashChargesNoPrimary (§5.4, issue 25): m = 3, a client whose
// primary is not S_0 crashes in an epoch's rounds, handing nothing over.
// Its slot runs dry and the epoch ends, but no server is charged: the
// primary only knows that its client left, which is no evidence, and the
// unfilled round is S_0's to end, charged to nobody. Before, the primary
// ended the epoch with its own fault abort ("a client left and its cover
// window is spent") and every server charged it, honest, to its refusal
// budget.
func TestClientCrashChargesNoPrimary(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		const m = 3
		p := testParams(32)
		p.RoundLimitMs = 4000
		tn := startAnonNet(t, m, m, m, p, nil)
		ctx := context.Background()
		index := map[string]int{}
		for i, s := range tn.servers {
			index[string(s.h.ID())] = i
		}
		// An epoch of the three clients in its rounds, a few rounds in.
		var (
			n     uint64
			chain []string
			leave = -1
		)
		if err := wait.Until(ctx, 5*time.Minute, func() bool {
			num, ch := tn.servers[0].RoundEpoch()
			if num == 0 {
				return false
			}
			for _, c := range tn.clients {
				if c.Stats().Rounds < 3 {
					return false
				}
			}
			n, chain = num, nil
			for _, id := range ch {
				chain = append(chain, string(id))
			}
			// Client i's primary is server i.
			for i := range tn.clients {
				if string(tn.servers[i].h.ID()) != chain[0] {
					leave = i
				}
			}
			return true
		}); err != nil {
			t.Fatalf("no epoch of the three clients in its rounds: %v", err)
		}
		primary := tn.servers[leave]
		t.Logf("epoch %d: the client of S_%d (server %d) crashes", n, posOf(chain, string(primary.h.ID())), leave)
		testMemnet(t).Crash(tn.clients[leave].Inspect().PeerID())
		if err := wait.Until(ctx, 5*time.Minute, func() bool {
			for _, s := range tn.servers {
				for _, es := range s.Snapshot().Epochs {
					if es.Number == n && !es.Ended {
						return false
					}
				}
			}
			return true
		}); err != nil {
			t.Fatalf("epoch %d did not end after its client crashed", n)
		}
		for _, es := range tn.servers[0].Snapshot().Epochs {
			if es.Number == n {
				t.Logf("epoch %d ended after %d of %d rounds: %q", n, es.Listed, es.Rounds, es.Reason)
			}
		}
		time.Sleep(2*DefaultTunables().AbortSettle + 5*time.Second) // virtual: the aborts' settle and relays
		for i, s := range tn.servers {
			for id, c := range s.ref.RefusalCounts() {
				if c > 0 {
					t.Errorf("server %d charged server %d (S_%d), primary of the crashed client: %v", i, index[string(id)], posOf(chain, string(id)), id == primary.h.ID())
				}
			}
		}
	})
}

func posOf(chain []string, id string) int {
	for j, c := range chain {
		if c == id {
			return j
		}
	}
	return -1
}
