//go:build riffletest

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// TestEarlyRootLateInputFramesS0 (issue 25): S_2 of four passes nothing
// on in round q and sends a signed root of q to S_0 and its receiver S_3
// once q opened there, before S_1's root (timely=false) or after it at S_0
// (timely=true); S_1 passes q on, its root to S_3 D late (D > 0: S_1
// corrupt too). S_0 timed its void once, when the claim came, from the
// bare early root; S_1's root, landing later, floors S_2's part there
// (blame.Dues.From) and moves the noted servers' body dues past that
// void. Before (void not re-read), "0s/timely=false" and
// "2.5s/timely=false" charged honest S_0 at S_0 and S_3, S_2 nowhere; now
// S_2 is charged (TestEarlyRootAfterOpenFramesS0). "evidence late": the
// others' void evidence reaches S_0 100 ms after its own; before (a void
// judged on the attestations in, however few), S_0 charged the claimant
// S_3 until the others' came, and the test read that (the first count),
// as in about 1 run in 20 of 1.5s/timely=true; now a void charges nobody
// while a missing attestation could still back a part (blame.ChargeOf).
func TestEarlyRootLateInputFramesS0(t *testing.T) {
	for _, tc := range []struct {
		D      time.Duration
		timely bool
		late   time.Duration // S_1's to S_3's charge evidence held back
	}{{0, false, 0}, {2500 * time.Millisecond, false, 0}, {0, true, 0}, {2500 * time.Millisecond, true, 0}, {1500 * time.Millisecond, true, 0}, {3500 * time.Millisecond, true, 0}, {5 * time.Second, true, 0}, {8 * time.Second, true, 0},
		{1500 * time.Millisecond, true, 100 * time.Millisecond}} {
		D := tc.D
		name := fmt.Sprintf("%v/timely=%v", D, tc.timely)
		if tc.late > 0 {
			name += fmt.Sprintf(", evidence %v late", tc.late) // no slash: not a subtest of the case before
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				p := testParams(16)
				p.RoundLimitMs, p.RoundIntervalMs = 4000, 2000
				fn := startFounded(t, 4, 4, 3, p, func(i int, c *ServerConfig) { c.MinServers = 3 })
				byID := map[peer.ID]*Server{}
				for _, s := range fn.servers {
					byID[s.ID()] = s
				}
				id, chain := runningEpoch(t, fn.servers[0])
				s1, bad := byID[chain[1]], byID[chain[2]]
				bad.mu.Lock()
				e := bad.epochs[id]
				q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 2
				pos := e.pos
				bad.mu.Unlock()
				late := func() time.Duration { return tc.late }
				s1.hooks.Store(&serverHooks{rootDelay: func(r uint32, to peer.ID) time.Duration {
					if r == q && to == chain[3] {
						return D
					}
					return 0
				}, spreadLate: late})
				bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r == q }, spreadLate: late})
				byID[chain[3]].hooks.Store(&serverHooks{spreadLate: late})
				b := wire.Batch{Epoch: id, Round: q, S: uint16(pos + 1), Root: [32]byte{7}}
				sig, _ := proto.Sign(bad.priv, batchDigest(&b))
				root := (&wire.Root{Epoch: id, Round: q, S: b.S, Root: b.Root, Sig: sig}).Marshal()
				send := func(to peer.ID) {
					if _, err := transport.Call(context.Background(), bad.h, to, transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: root, Timeout: transport.ShortTimeout}); err != nil {
						t.Logf("root to %s: %v", to.ShortString(), err)
					}
				}
				open := func(p peer.ID) bool {
					s := byID[p]
					s.mu.Lock()
					defer s.mu.Unlock()
					_, ok := s.epochs[id].openAt[q]
					return ok
				}
				if err := wait.Until(context.Background(), 3*time.Minute, func() bool { return open(chain[0]) && open(chain[3]) }); err != nil {
					t.Fatal("round never opened")
				}
				if tc.timely {
					_ = wait.Until(context.Background(), 3*time.Minute, func() bool {
						s := byID[chain[0]]
						s.mu.Lock()
						defer s.mu.Unlock()
						_, ok := s.epochs[id].rootAt[rootKey{q, 2}]
						return ok
					})
				}
				send(chain[0])
				send(chain[3])
				_ = wait.Until(context.Background(), 3*time.Minute, func() bool {
					for _, p := range []peer.ID{chain[0], chain[3]} {
						if len(byID[p].ref.RefusalCounts()) == 0 {
							return false
						}
					}
					return true
				})
				for i, h := range chain {
					s := byID[h]
					s.mu.Lock()
					ep := s.epochs[id]
					var lack uint64 = 999
					if a := ep.attested[q]; a != nil {
						lack = a.Lacking
					}
					x := ep.rounds[q]
					var va time.Time
					var lackBy uint16
					if x != nil {
						va, lackBy = x.voidAt, x.lackBy
					}
					tm := ep.times(q)
					s.mu.Unlock()
					t.Logf("S_%d: voidAt %v lackBy %d attest lacking %b parts %v notes %v", i, va.Format("05.000"), lackBy, lack, tm.Parts, tm.Notes)
				}
				for _, h := range []peer.ID{chain[0], chain[3]} {
					s := byID[h]
					s.mu.Lock()
					tm := s.epochs[id].times(q)
					s.mu.Unlock()
					c := s.ref.RefusalCounts()
					t.Logf("server %s: open %v parts %v; counts: S_0 %d, S_1 %d, S_2 %d, S_3 (receiver) %d", h.ShortString(), tm.Open.Format("15:04:05.000"), tm.Parts, c[chain[0]], c[chain[1]], c[chain[2]], c[chain[3]])
					if c[chain[3]] > 0 {
						t.Errorf("honest receiver S_3 charged at %s", h.ShortString())
					}
					if c[chain[0]] > 0 {
						t.Errorf("honest S_0 charged at %s", h.ShortString())
					}
					if c[chain[2]] == 0 {
						t.Errorf("corrupt S_2 (early root, passes nothing on) not charged at %s", h.ShortString())
					}
				}
			})
		})
	}
}

// TestEarlyRootAfterOpenFramesS0 (issue 25): TestEarlyRootFramesReceiver
// with S_1's signed root sent to every other server (its receiver S_2
// too) once q opened there, about 4 s before S_0 passes q on; S_1 passes
// nothing on. S_0 timed its void from the bare root (11.45 s); its own
// part and S_1's real root then came (11.42 s), floor S_1's part and move
// S_3's note body due to 12.9 s. Before, S_0 voided at the old time, S_3
// attested nothing lacking, and honest S_0 was charged at all three honest
// servers, S_1 at none; now S_0 reads VoidAfter again on every change
// (onLack) and S_1 is charged everywhere.
func TestEarlyRootAfterOpenFramesS0(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		p := testParams(16)
		p.RoundLimitMs, p.RoundIntervalMs = 4000, 2000
		fn := startFounded(t, 4, 4, 3, p, func(i int, c *ServerConfig) { c.MinServers = 3 })
		byID := map[peer.ID]*Server{}
		for _, s := range fn.servers {
			byID[s.ID()] = s
		}
		id, chain := runningEpoch(t, fn.servers[0])
		bad := byID[chain[1]]
		bad.mu.Lock()
		e := bad.epochs[id]
		q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 2
		pos := e.pos
		bad.mu.Unlock()
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r == q }})
		b := wire.Batch{Epoch: id, Round: q, S: uint16(pos + 1), Root: [32]byte{7}}
		sig, _ := proto.Sign(bad.priv, batchDigest(&b))
		root := (&wire.Root{Epoch: id, Round: q, S: b.S, Root: b.Root, Sig: sig}).Marshal()
		send := func(to peer.ID) {
			if _, err := transport.Call(context.Background(), bad.h, to, transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: root, Timeout: transport.ShortTimeout}); err != nil {
				t.Logf("root to %s: %v", to.ShortString(), err)
			}
		}
		open := func(p peer.ID) bool {
			s := byID[p]
			s.mu.Lock()
			defer s.mu.Unlock()
			_, ok := s.epochs[id].openAt[q]
			return ok
		}
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool { return open(chain[0]) && open(chain[2]) && open(chain[3]) }); err != nil {
			t.Fatal("round never opened")
		}
		send(chain[2])
		send(chain[0])
		send(chain[3])
		_ = wait.Until(context.Background(), 3*time.Minute, func() bool {
			for _, p := range []peer.ID{chain[0], chain[2], chain[3]} {
				if len(byID[p].ref.RefusalCounts()) == 0 {
					return false
				}
			}
			return true
		})
		for _, h := range []peer.ID{chain[0], chain[2], chain[3]} {
			c := byID[h].ref.RefusalCounts()
			t.Logf("server %s counts: S_0 %d, S_1 (attacker) %d, S_2 (receiver) %d, S_3 %d", h.ShortString(), c[chain[0]], c[chain[1]], c[chain[2]], c[chain[3]])
			if c[chain[0]] > 0 || c[chain[2]] > 0 {
				t.Errorf("honest server charged at %s", h.ShortString())
			}
			if c[chain[1]] == 0 {
				t.Errorf("the early root's signer S_1 not charged at %s", h.ShortString())
			}
		}
	})
}
