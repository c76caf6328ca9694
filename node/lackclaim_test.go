//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// TestForeignClaimMutesLack: m = 5, corrupt S_1 hides its batch of a
// round from everyone; corrupt S_3, once the round is open at honest S_2,
// sends S_2 (only) its own signed lack claim of that round. S_2 keeps
// that claim for its void's evidence, but sends its own: when it sent the
// one it took first as its own, every receiver refused it ("lack claimed
// by the wrong server"), S_0 never heard S_2's lack.
func TestForeignClaimMutesLack(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		const m = 5
		p := testParams(64)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, m, m, 2, 2)
		sig, rcv, s3 := bn.servers[1], bn.servers[2], bn.servers[3]
		c := &relayRound{lackCase{bad: sig}}
		sig.hooks.Store(&serverHooks{hideOut: c.is})
		sent := make(chan error, 1)
		go func() {
			_ = wait.Until(context.Background(), 5*time.Minute, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.fired })
			id, r := c.epoch, c.round
			_ = wait.Until(context.Background(), 5*time.Minute, func() bool {
				rcv.mu.Lock()
				defer rcv.mu.Unlock()
				e := rcv.epochs[id]
				if e == nil {
					return false
				}
				_, ok := e.openAt[r]
				return ok
			})
			s3.mu.Lock()
			e := s3.epochs[id]
			a := s3.signAttestLocked(e, wire.ClaimLack, r, 1<<uint(e.pos-1))
			s3.mu.Unlock()
			_, err := transport.Call(context.Background(), s3.h, rcv.h.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeLack, Body: a.Marshal(), Timeout: transport.ShortTimeout})
			sent <- err
		}()
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		epoch, r := c.get(t)
		if err := <-sent; err != nil {
			t.Fatalf("S_3's claim to S_2: %v", err)
		}
		for _, i := range []int{0, 2, 4} {
			s := bn.servers[i]
			v := epochRanOn(t, s, epoch)
			_ = wait.Until(context.Background(), 20*time.Second, func() bool { return v == 0 || len(s.ref.RefusalCounts()) > 0 })
			s.mu.Lock()
			lb := s.epochs[epoch].round(r).lackBy
			s.mu.Unlock()
			t.Logf("round %d: honest server %d: %d void, lackBy %d, charges %v", r, i, v, lb, chargesByPos(s, bn.servers))
			if i == 0 && lb != 2 {
				t.Errorf("S_0 never took honest S_2's lack (lackBy %d)", lb)
			}
			for _, j := range []int{0, 2, 4} {
				if s.ref.RefusalCounts()[bn.servers[j].h.ID()] > 0 {
					t.Errorf("honest S_%d charged at server %d", j, i)
				}
			}
		}
	})
}

// TestSilentClaimFramesS0: TestStaggeredRootFramesS0 (m = 5, corrupt S_1
// and S_2) with one change: S_2 gives its input up but sends no lack
// notice, so no claim rides in any void's evidence. S_0 voids on the
// missing publication instead, and no honest server may pay for it.
func TestSilentClaimFramesS0(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		const m = 5
		p := testParams(64)
		p.RoundLimitMs = 4000
		F := fetchGrace(&sepoch{final: &proto.View{Desc: &wire.Descriptor{Params: p.Wire()}}})
		bn := startBlameNetParams(t, p, m, m, 2, 2)
		s0, sig, rcv := bn.servers[0], bn.servers[1], bn.servers[2]
		c := &relayRound{lackCase{bad: sig}}
		fired := func(r uint32) bool { c.mu.Lock(); defer c.mu.Unlock(); return c.fired && r == c.round }
		sig.hooks.Store(&serverHooks{
			rootDelay: func(r uint32, to peer.ID) time.Duration {
				if !c.is(r) || to == s0.h.ID() {
					return 0
				}
				if to == rcv.h.ID() {
					return F
				}
				return 2 * F
			},
			serveLate: func(r uint32) time.Duration {
				if c.is(r) {
					return 8 * F
				}
				return 0
			},
			attestNone: fired,
		})
		rcv.hooks.Store(&serverHooks{dropIn: c.is, noteLate: func(r uint32) time.Duration {
			if c.is(r) {
				return 23 * F / 10
			}
			return 0
		}, attestNone: fired, silentLack: c.is})
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		epoch, r := c.get(t)
		for _, i := range []int{0, 3, 4} {
			s := bn.servers[i]
			v := epochRanOn(t, s, epoch)
			_ = wait.Until(context.Background(), 20*time.Second, func() bool { return v == 0 || len(s.ref.RefusalCounts()) > 0 })
			t.Logf("round %d: honest server %d: %d void, charges %v", r, i, v, chargesByPos(s, bn.servers))
			for _, j := range []int{0, 3, 4} {
				if s.ref.RefusalCounts()[bn.servers[j].h.ID()] > 0 {
					t.Errorf("honest S_%d charged at server %d", j, i)
				}
			}
		}
	})
}
