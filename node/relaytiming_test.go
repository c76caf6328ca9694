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
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// chargesByPos is s's refusal counts keyed by chain position (s0, s1…).
func chargesByPos(s *Server, servers []*Server) map[string]int {
	out := map[string]int{}
	for id, k := range s.ref.RefusalCounts() {
		for j, x := range servers {
			if x.h.ID() == id {
				out[fmt.Sprintf("s%d", j)] = k
			}
		}
	}
	return out
}

// TestRootWithheldSlowLink (issue 25): TestRelayedBatch's "root withheld"
// (m = 3; a corrupt S_0 refuses its batch to S_1 and announces its root
// to S_2 only, so S_1 gets it by S_2's forward) with a one-way latency on
// the links between S_1 and S_2, at a 4 s round limit. S_1's note reaches
// S_2 two fetches and two delays after the root came there, plus the
// stream's set-up. With noteLast two and a half fetches (a quarter second
// of slack), at 140 ms S_1's note was refused, S_2 lacked nothing, and
// honest S_1 was charged at every server.
func TestRootWithheldSlowLink(t *testing.T) {
	for _, lat := range []time.Duration{20 * time.Millisecond, 140 * time.Millisecond} {
		t.Run(lat.String(), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				p := testParams(64)
				p.RoundLimitMs = 4000
				bn := startBlameNetParams(t, p, 3, 3, 2, 2)
				bad := bn.servers[0]
				c := &relayRound{lackCase{bad: bad}}
				s1 := bn.servers[1].h.ID()
				bad.hooks.Store(&serverHooks{refuseSucc: c.is, rootTo: func(r uint32, p peer.ID, _ bool) bool { return p != s1 || !c.is(r) }})
				mn := testMemnet(t)
				mn.SetLink(bn.servers[1].ID(), bn.servers[2].ID(), memnet.Link{Latency: lat})
				mn.SetLink(bn.servers[2].ID(), bn.servers[1].ID(), memnet.Link{Latency: lat})
				lackShare(t, bn, 3*int(p.ChunkSize)+100)
				epoch, r := c.get(t)
				for i, s := range bn.servers {
					v := epochRanOn(t, s, epoch)
					_ = wait.Until(context.Background(), 10*time.Second, func() bool { return v == 0 || len(s.ref.RefusalCounts()) > 0 })
					t.Logf("round %d: server %d: %d void, charges %v", r, i, v, chargesByPos(s, bn.servers))
					if s.ref.RefusalCounts()[s1] > 0 {
						t.Errorf("honest receiver S_1 charged at server %d", i)
					}
				}
			})
		})
	}
}

// TestStaggeredRootFramesS0 (issue 25): a corrupt signer S_1 and its
// corrupt receiver S_2, here in a chain of five (three honest: inside the
// model of §3; the finding's chain of four has two honest of four, outside
// it, and fails the same way). S_1 sends its root of the round to S_0 at
// T, to S_2 at T+F, to every later server at T+2F (F a fetch) and answers
// no noted server's fetch in time; S_2 ignores its input, notes 2.3F after
// its hop wait (inside noteLast where the root came at T+2F, past it at
// S_0), claims at its window's end, and neither attests anything. S_0
// refused the note and attests S_2's part lacking, the others took it:
// no part is backed by more than half of the others. Before, the void's
// proposer, honest S_0, was charged at every honest server; now the void
// carries S_2's signed lack claim (wire.ClaimLack), and the claimant pays.
func TestStaggeredRootFramesS0(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	staggeredRoot(t, 5, true, 0)
}

// staggeredRoot runs TestStaggeredRootFramesS0's attack in a chain of m:
// S_1 sends its root to S_0 at T, to S_2 at T+F and to every later server
// at T+2F, or with late > 0 to every server but S_2 at T+late; with badRcv
// S_2 is corrupt as there, else honest and S_1 withholds its batch from
// it. Every honest server is checked: S_0 is not charged, nor an honest
// S_2, which S_1's charge must then be.
func staggeredRoot(t *testing.T, m int, badRcv bool, late time.Duration) {
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs = 4000
		F := fetchGrace(&sepoch{final: &proto.View{Desc: &wire.Descriptor{Params: p.Wire()}}})
		bn := startBlameNetParams(t, p, m, m, 2, 2)
		s0, sig, rcv := bn.servers[0], bn.servers[1], bn.servers[2]
		c := &relayRound{lackCase{bad: sig}}
		sig.hooks.Store(&serverHooks{
			rootDelay: func(r uint32, to peer.ID) time.Duration {
				if !c.is(r) || (to == s0.h.ID() && late == 0) {
					return 0
				}
				if to == rcv.h.ID() {
					return F
				}
				if late > 0 {
					return late
				}
				return 2 * F
			},
			refuseSucc: func(r uint32) bool { return !badRcv && c.is(r) },
			serveLate: func(r uint32) time.Duration {
				if c.is(r) {
					return 8 * F
				}
				return 0
			},
			attestNone: func(r uint32) bool { c.mu.Lock(); defer c.mu.Unlock(); return c.fired && r == c.round },
		})
		honest := []int{0}
		for i := 3; i < m; i++ {
			honest = append(honest, i)
		}
		if badRcv {
			rcv.hooks.Store(&serverHooks{dropIn: c.is, noteLate: func(r uint32) time.Duration {
				if c.is(r) {
					return 23 * F / 10
				}
				return 0
			}, attestNone: func(r uint32) bool { c.mu.Lock(); defer c.mu.Unlock(); return c.fired && r == c.round }})
		} else {
			honest = append(honest, 2)
		}
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		epoch, r := c.get(t)
		for _, i := range honest {
			s := bn.servers[i]
			v := epochRanOn(t, s, epoch)
			_ = wait.Until(context.Background(), 10*time.Second, func() bool { return v == 0 || len(s.ref.RefusalCounts()) > 0 })
			t.Logf("round %d: honest server %d: %d void, charges %v", r, i, v, chargesByPos(s, bn.servers))
			for _, j := range honest {
				if s.ref.RefusalCounts()[bn.servers[j].h.ID()] > 0 {
					t.Errorf("honest S_%d charged at server %d", j, i)
				}
			}
			if !badRcv && s.ref.RefusalCounts()[rcv.h.ID()] > 0 {
				t.Errorf("honest receiver S_2 charged at server %d", i)
			}
			if !badRcv && s.ref.RefusalCounts()[sig.h.ID()] == 0 {
				t.Errorf("S_1 not charged at server %d", i)
			}
		}
	})
}

// TestStaggeredRootOneCorrupt: TestStaggeredRootFramesS0's staggered root
// from a corrupt S_1 alone, m = 4: its receiver S_2 honest, the batch
// withheld from it and the noted servers' copies late. "0s": the roots
// staggered by a fetch; S_1 charged. "3s": the root to S_2 in time, to
// S_0 and S_3 3 s (six fetches) later, past S_2's window: before, the
// others held S_1's part and counted S_2's due from their own late root,
// S_2's notes came before the root there, and honest S_2 was charged at
// every honest server; now a part that came after its due (counted from
// the part before it) counts as missing (blame.Dues.Late), and S_1 is
// charged. "2.75s": the root to the others inside LateGrace of its due,
// not late there, and after S_2's window from its own root: S_2 asks on
// until a hop after its input's due (blame.Dues.LackEnd), its notes are
// taken, and S_1 is charged; with the grace and S_2's window a hop from
// its root, honest S_2 was charged at every honest server.
func TestStaggeredRootOneCorrupt(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	for _, late := range []time.Duration{0, 2750 * time.Millisecond, 3 * time.Second} {
		t.Run(late.String(), func(t *testing.T) {
			t.Parallel()
			staggeredRoot(t, 4, false, late)
		})
	}
}

// TestEarlyRootFramesReceiver (issue 25): S_1 (of four) signs one root of
// round q, sends it to its receiver S_2 before q opens there, and to S_0
// and S_3 once q opened there; no batch and no other root of q. Before,
// S_2 counted the root as come a round limit after its opening and noted
// past the others' noteLast, while S_0 and S_3 counted S_2's part due
// from their own root's arrival: honest S_2 was charged everywhere, S_1
// never. Now every server counts S_1's part as come no sooner than S_0's
// (blame.Dues.From): S_2's notes are taken, nobody gets the batch, and S_1 is
// charged.
func TestEarlyRootFramesReceiver(t *testing.T) {
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
		send(chain[2])
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
		for _, h := range []peer.ID{chain[0], chain[2], chain[3]} {
			c := byID[h].ref.RefusalCounts()
			t.Logf("server %s counts: S_0 %d, S_1 (attacker) %d, S_2 (receiver) %d, S_3 %d", h.ShortString(), c[chain[0]], c[chain[1]], c[chain[2]], c[chain[3]])
			if c[chain[2]] > 0 {
				t.Errorf("honest receiver S_2 charged at %s", h.ShortString())
			}
			if c[chain[1]] == 0 {
				t.Errorf("the early root's signer S_1 not charged at %s", h.ShortString())
			}
		}
	})
}

// TestSqueezedReceiverNotFramed (issue 25, the attacker's review of
// 701d2bd): m = 5, S_1 and S_3 corrupt (inside the model). S_1 keeps its
// root of a round from its receiver S_2, which gets it from another
// server's forward a fetch later, and sends S_2 its batch just before S_2
// would note, two fetches (less 0.1 s) after it sent its root to the
// others. Honest S_2 is slow: it passes the round on 1.5 s (of a 2 s hop)
// after its input came. S_3 ignores its input and claims the lack. Before
// (blame.Dues.Late with no grace), S_2's root came 0.4 s after its due at
// every honest server, counted lacking there, and honest S_2 was charged
// at every honest server; now S_3 is, and S_2 nowhere.
func TestSqueezedReceiverNotFramed(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs = 4000
		F := fetchGrace(&sepoch{final: &proto.View{Desc: &wire.Descriptor{Params: p.Wire()}}})
		slow := 3 * time.Second / 2
		bn := startBlameNetParams(t, p, 5, 5, 2, 2)
		sig, rcv, claim := bn.servers[1], bn.servers[2], bn.servers[3]
		c := &relayRound{lackCase{bad: sig}}
		sig.hooks.Store(&serverHooks{
			rootTo: func(r uint32, _ peer.ID, receiver bool) bool { return !receiver || !c.is(r) },
			lateOut: func(r uint32) time.Duration {
				if c.is(r) {
					return 2*F - 100*time.Millisecond
				}
				return 0
			},
		})
		rcv.hooks.Store(&serverHooks{
			rootDelay: func(r uint32, _ peer.ID) time.Duration {
				if c.is(r) {
					return slow
				}
				return 0
			},
			lateOut: func(r uint32) time.Duration {
				if c.is(r) {
					return slow
				}
				return 0
			},
		})
		claim.hooks.Store(&serverHooks{dropIn: c.is})
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		epoch, r := c.get(t)
		for _, i := range []int{0, 2, 4} {
			s := bn.servers[i]
			v := epochRanOn(t, s, epoch)
			_ = wait.Until(context.Background(), 10*time.Second, func() bool { return v == 0 || len(s.ref.RefusalCounts()) > 0 })
			t.Logf("round %d: honest server %d: %d void, charges %v", r, i, v, chargesByPos(s, bn.servers))
			if s.ref.RefusalCounts()[rcv.h.ID()] > 0 {
				t.Errorf("honest, slow S_2 charged at server %d", i)
			}
			if v > 0 && s.ref.RefusalCounts()[claim.h.ID()] == 0 {
				t.Errorf("the claimant S_3 not charged for the void at server %d", i)
			}
		}
	})
}
