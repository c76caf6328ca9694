//go:build riffletest

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
)

// relayRound is the one round r ≥ 1 a corrupt S_0's hook acts on: the
// first it is asked about, in the epoch running then. Its epoch is looked
// up on that first call only (a later call may hold the server's lock).
type relayRound struct{ lackCase }

func (c *relayRound) is(r uint32) bool {
	if r < 1 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fired {
		return r == c.round && c.cur() == c.epoch
	}
	c.fired, c.round, c.epoch = true, r, c.cur()
	return true
}

// TestRelayedBatch: a corrupt S_0 keeps its signed batch of one round from
// the honest S_1, with m = 3 and m = 4 (docs/protocol.md §5.2 v3, "a batch
// its receiver lacks is relayed"):
//   - refused: not sent to S_1 and S_1's fetch refused, handed to the other
//     chain servers that ask: they relay it to S_1, the round is published,
//     no void, nobody charged;
//   - hidden: kept from everyone: S_1 claims the lack, the round is void,
//     and the void is S_0's (the others attest they could not get it);
//   - late inside: sent half a second before S_1's lack window closes and
//     kept from every fetch until then: no void, nobody charged;
//   - late outside: sent half a second after it: S_1 has claimed, the void
//     is S_0's;
//   - relayed late: refused to S_1, and the others' fetches answered a
//     quarter of a second before S_1's window closes: whether or not S_1
//     gets the copy in time, any void is S_0's (a copy that came after
//     the noted servers' bodyWait counts as missing there);
//   - stalled holder (m = 4): refused to S_1 and handed to the others, and
//     a corrupt S_2 holds every ask of S_1 for a round limit, answering
//     nothing: S_1 gets the copy from S_3, no void, nobody charged.
//   - root withheld: refused to S_1, handed to the others, and S_0's root
//     announced to every server but S_1: the others hand the root on to
//     S_1 (forwardRoot), which then asks as in "refused"; no void, nobody
//     charged. Before, S_1 had no root to start from, and was charged
//     for the round's void (its part missing everywhere);
//   - root withheld, hidden: the same root, the batch kept from everyone:
//     the void is S_0's (before, S_1's).
//
// In every case the epoch runs to its last round and the file is fetched
// whole. Before, S_1 was charged for the void whenever it claimed the
// lack (refused, hidden, late outside).
func TestRelayedBatch(t *testing.T) {
	for _, m := range []int{3, 4} {
		modes := []string{"refused", "hidden", "late inside", "late outside", "relayed late"}
		if m == 4 {
			modes = append(modes, "stalled holder")
		}
		modes = append(modes, "root withheld", "root withheld, hidden")
		for _, mode := range modes {
			t.Run(fmt.Sprintf("m=%d %s", m, mode), func(t *testing.T) {
				t.Parallel()
				virtual(t, func(t *testing.T) { relayCase(t, m, mode) })
			})
		}
	}
}

func relayCase(t *testing.T, m int, mode string) {
	p := testParams(64) // room for a void round's chunks 32 rounds on (resendHold)
	p.RoundLimitMs = 4000
	bn := startBlameNetParams(t, p, m, m, 2, 2)
	bad := bn.servers[0]
	c := &relayRound{lackCase{bad: bad}}
	// S_1's lack window: half a round limit from S_0's root (lack.go).
	window := time.Duration(p.RoundLimitMs) * time.Millisecond / 2
	h := &serverHooks{}
	wantVoid := 0
	switch mode {
	case "refused":
		h.refuseSucc = c.is
	case "hidden":
		h.hideOut, wantVoid = c.is, 1
	case "late inside":
		h.lateOut = func(r uint32) time.Duration {
			if c.is(r) {
				return window - 500*time.Millisecond
			}
			return 0
		}
	case "relayed late":
		h.refuseSucc = c.is
		h.serveLate = func(r uint32) time.Duration {
			if c.is(r) {
				return window - 250*time.Millisecond
			}
			return 0
		}
		wantVoid = -1 // either
	case "root withheld":
		// Refused to S_1, and S_0's root announced to every server
		// but S_1.
		h.refuseSucc = c.is
		s1 := bn.servers[1].h.ID()
		h.rootTo = func(r uint32, p peer.ID, _ bool) bool { return p != s1 || !c.is(r) }
		wantVoid = -1 // either
	case "root withheld, hidden":
		// Kept from everyone, and S_0's root from S_1.
		h.hideOut = c.is
		s1 := bn.servers[1].h.ID()
		h.rootTo = func(r uint32, p peer.ID, _ bool) bool { return p != s1 || !c.is(r) }
		wantVoid = 1
	case "stalled holder":
		h.refuseSucc = c.is
		bn.servers[2].hooks.Store(&serverHooks{stallRelay: c.is})
	case "late outside":
		h.lateOut = func(r uint32) time.Duration {
			if c.is(r) {
				return window + 500*time.Millisecond
			}
			return 0
		}
		wantVoid = 1
	}
	bad.hooks.Store(h)
	lackShare(t, bn, 3*int(p.ChunkSize)+100)
	// byPos is a count of refusals by the servers' start order (S_0
	// first: the group's founder leads the first epoch).
	byPos := func(c map[peer.ID]int) map[string]int {
		out := map[string]int{}
		for id, k := range c {
			name := id.ShortString()
			for i, s := range bn.servers {
				if s.h.ID() == id {
					name = fmt.Sprintf("s%d", i)
				}
			}
			out[name] = k
		}
		return out
	}
	epoch, r := c.get(t)
	for i, s := range bn.servers {
		v := epochRanOn(t, s, epoch)
		if wantVoid < 0 && v <= 1 {
			wantVoid = v // the first server says which
		}
		if v != wantVoid {
			t.Fatalf("server %d: %d void round(s), want %d (charges %v)", i, v, wantVoid, byPos(s.ref.RefusalCounts()))
		}
		if recs, _ := s.rb.Records(); len(recs) != 0 {
			t.Fatalf("server %d named someone: %+v", i, recs)
		}
	}
	want := map[peer.ID]int{}
	if wantVoid > 0 {
		want[bad.h.ID()] = 1
	}
	for i, s := range bn.servers {
		err := wait.Until(context.Background(), 10*time.Second, func() bool {
			return len(s.ref.RefusalCounts()) == len(want) && s.ref.RefusalCounts()[bad.h.ID()] == want[bad.h.ID()]
		})
		if err != nil {
			t.Fatalf("server %d counts %v; want %v", i, byPos(s.ref.RefusalCounts()), byPos(want))
		}
	}
	t.Logf("m = %d, round %d %s by S_0: %d void, charged %v", m, r, mode, wantVoid, byPos(want))
}
