//go:build riffletest

package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestRelayStallerFramesReceiver: m = 5, corrupt S_1 and S_4 (three
// honest). S_1 withholds its batch of a round from its receiver S_2 and
// answers the noted servers' fetches 1.7 fetches late (inside their body
// due); S_4 answers S_2's first ask (the note) at once and holds every
// later one. When S_2 asked the holders one at a time after the notes,
// waiting a fetch on each, each turn took a fetch and a pause and S_2 did
// not ask an honest holder again before its window closed: its claim was
// unbacked and honest S_2 charged at every honest server. "false": the
// control, S_4 answering every ask.
func TestRelayStallerFramesReceiver(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	for _, stall := range []bool{false, true} {
		t.Run(fmt.Sprint(stall), func(t *testing.T) {
			t.Parallel()
			oneStaller(t, stall)
		})
	}
}

func oneStaller(t *testing.T, stall bool) {
	var mu sync.Mutex
	asks := 0
	relayStall(t, 5, 17, []int{0, 2, 3}, func(bn *blameNet, c *relayRound, _ *serverHooks) {
		bn.servers[4].hooks.Store(&serverHooks{stallRelay: func(r uint32) bool {
			if !c.is(r) {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			asks++
			return stall && asks > 1
		}})
	})
}

// relayStall runs a relay-stall case on m servers: S_1 withholds its
// batch of a round from S_2 and answers the noted servers' fetches
// late/10 fetches late; set adds the stallers' hooks (and may add to
// S_1's, h, before they are stored); no server of honest is charged.
func relayStall(t *testing.T, m, late int, honest []int, set func(bn *blameNet, c *relayRound, h *serverHooks)) {
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs = 4000
		F := fetchGrace(&sepoch{final: &proto.View{Desc: &wire.Descriptor{Params: p.Wire()}}})
		bn := startBlameNetParams(t, p, m, m, 2, 2)
		sig := bn.servers[1]
		c := &relayRound{lackCase{bad: sig}}
		h := &serverHooks{
			refuseSucc: c.is,
			serveLate: func(r uint32) time.Duration {
				if c.is(r) {
					return time.Duration(late) * F / 10
				}
				return 0
			},
		}
		set(bn, c, h)
		sig.hooks.Store(h)
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		epoch, _ := c.get(t)
		noHonestCharged(t, bn, epoch, honest)
	})
}

// TestRelayStallersFrameReceiver: m = 7, corrupt S_1, S_5, S_6 (four
// honest). S_1 withholds its batch of a round from S_2 and answers the
// noted servers' fetches 1.3 fetches late (inside their body due); S_5
// and S_6 hold every ask of S_2's unanswered. When S_2 asked the holders
// one at a time after the notes, a turn took two fetches and it did not
// ask an honest holder again before its window closed: honest S_2 was
// charged at every honest server. "0": the control, no staller.
func TestRelayStallersFrameReceiver(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	for _, n := range []int{0, 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			stallersFrame(t, n)
		})
	}
}

func stallersFrame(t *testing.T, n int) {
	relayStall(t, 7, 13, []int{0, 2, 3, 4}, func(bn *blameNet, c *relayRound, h *serverHooks) {
		h.attestNone = func(r uint32) bool { c.mu.Lock(); defer c.mu.Unlock(); return c.fired && r == c.round }
		for _, i := range []int{5, 6}[:n] {
			bn.servers[i].hooks.Store(&serverHooks{stallRelay: c.is})
		}
	})
}

// noHonestCharged fails if any of the honest servers at positions honest
// charged another of them once the epoch ran (or a charge came).
func noHonestCharged(t *testing.T, bn *blameNet, epoch [32]byte, honest []int) {
	t.Helper()
	for _, i := range honest {
		s := bn.servers[i]
		v := epochRanOn(t, s, epoch)
		_ = wait.Until(context.Background(), 20*time.Second, func() bool { return v == 0 || len(s.ref.RefusalCounts()) > 0 })
		t.Logf("honest server %d: %d void, charges %v", i, v, chargesByPos(s, bn.servers))
		for _, j := range honest {
			if s.ref.RefusalCounts()[bn.servers[j].h.ID()] > 0 {
				t.Errorf("honest S_%d charged at server %d", j, i)
			}
		}
	}
}
