//go:build riffletest

package node

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
)

// listNet is a running epoch of four founding servers and three clients
// (round limit 4 s, eight rounds), with its chain's servers by position.
type listNet struct {
	fn      *foundedNet
	id      [32]byte
	chain   []*Server
	num     uint64
	reasons map[*Server]string // why the epoch ended, as ended saw it
}

func startListNet(t *testing.T) *listNet {
	t.Helper()
	p := testParams(8)
	p.RoundLimitMs = 4000
	fn := startFounded(t, 4, 4, 3, p, func(i int, c *ServerConfig) { c.MinServers = 3 })
	byID := map[peer.ID]*Server{}
	for _, s := range fn.servers {
		byID[s.ID()] = s
	}
	id, ids := runningEpoch(t, fn.servers[0])
	ln := &listNet{fn: fn, id: id, reasons: map[*Server]string{}}
	for _, p := range ids {
		ln.chain = append(ln.chain, byID[p])
	}
	s0 := ln.chain[0]
	s0.mu.Lock()
	ln.num = s0.epochs[id].v.Desc.Number
	s0.mu.Unlock()
	return ln
}

// ended waits until the epoch ended at each of servers, within d.
func (ln *listNet) ended(t *testing.T, servers []*Server, d time.Duration) {
	t.Helper()
	start := time.Now()
	if err := wait.Until(context.Background(), d, func() bool {
		for _, s := range servers {
			s.mu.Lock()
			e := s.epochs[ln.id]
			over := e == nil || e.ended
			if e != nil && e.ended && ln.reasons[s] == "" {
				ln.reasons[s] = e.reason
			}
			s.mu.Unlock()
			if !over {
				return false
			}
		}
		return true
	}); err != nil {
		for i, s := range servers {
			s.mu.Lock()
			e := s.epochs[ln.id]
			var missing []uint32
			for q, x := range e.rounds {
				if e.listMissing(x) {
					missing = append(missing, q)
				}
			}
			s.mu.Unlock()
			t.Logf("server %d: published rounds without a list %v; top certified %d", i, missing, s.cert.Top())
		}
		t.Fatalf("epoch %d still runs %v on", ln.num, d)
	}
	t.Logf("epoch %d ended everywhere %v on", ln.num, time.Since(start))
}

func (ln *listNet) reason(s *Server) string {
	if r, ok := ln.reasons[s]; ok {
		return r
	}
	return "(not seen)"
}

// charges checks each of servers' counts after the evidence settled:
// culprit (if any) counted, every other chain server not. The culprit's
// charge is waited for while the network runs; then the clients leave,
// so that no epoch starts and the settle costs only the servers' relays
// of the evidence of the epochs that ran (in virtual time every epoch run
// meanwhile was CPU).
func (ln *listNet) charges(t *testing.T, servers []*Server, culprit *Server) {
	t.Helper()
	if culprit != nil {
		wait.Until(context.Background(), 90*time.Second, func() bool {
			for _, s := range servers {
				if s.ref.RefusalCounts()[culprit.ID()] == 0 {
					return false
				}
			}
			return true
		}) // on a timeout the checks below say who did not charge it
	}
	for _, c := range ln.fn.clients {
		c.Close()
	}
	time.Sleep(90 * time.Second) // virtual: the evidence relays settle
	var ids []peer.ID
	for _, s := range ln.chain {
		ids = append(ids, s.ID())
	}
	for _, s := range servers {
		counts := s.ref.RefusalCounts()
		t.Logf("%s: ended %q; charges%s", s.ID().ShortString(), ln.reason(s), fmtCharges(counts, ids))
		for j, o := range ln.chain {
			if o == culprit && counts[o.ID()] == 0 {
				t.Errorf("%s did not charge S_%d", s.ID().ShortString(), j)
			}
			if o != culprit && counts[o.ID()] != 0 {
				t.Errorf("%s charged S_%d %d times", s.ID().ShortString(), j, counts[o.ID()])
			}
		}
	}
}

// TestListlessEpochEnds (issue 25): a corrupt S_0 of four mixes and
// publishes every round and proposes no list of the last two. Past each
// list's due the honest servers ask the chain for it and sign no abort;
// past ListGone each signs a note that no list was proposed to it, and
// with more than half of the chain's notes the epoch ends at each,
// charging nobody, and the group goes on to the next number (with the
// abort off, before this: the epoch held for good, nobody charged).
func TestListlessEpochEnds(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		ln.chain[0].hooks.Store(&serverHooks{noList: func(r uint32) bool { return r >= last-1 }})
		honest := ln.chain[1:]
		ln.ended(t, honest, 3*time.Minute)
		for _, s := range honest {
			if r := ln.reason(s); !strings.Contains(r, "no request list proposed") {
				t.Errorf("%s: ended %q, not for the list never proposed", s.ID().ShortString(), r)
			}
		}
		ln.charges(t, honest, nil)
		if err := wait.Until(context.Background(), 5*time.Minute, func() bool {
			for _, s := range honest {
				if s.cert.Top() <= ln.num {
					return false
				}
			}
			return true
		}); err != nil {
			t.Errorf("no number past %d certified at the honest servers: %v", ln.num, ln.fn.numbers())
		}
	})
}

// TestUndeliveredListChargesNobody (issue 25): a corrupt S_0 of four
// proposes the lists of the last two rounds, has them signed and
// delivers them nowhere. Every signer sends its signature to every chain
// server, so each honest server assembles the lists itself: the epoch
// completes at each, nobody is charged, and S_0 is asked for no list of
// those rounds (before: the honest servers, which had a proposal, signed
// no note, the epoch held for good, nobody charged, and they asked S_0
// 55 times in eight virtual minutes past ListGone).
func TestUndeliveredListChargesNobody(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		var asked atomic.Int64
		ln.chain[0].hooks.Store(&serverHooks{
			listTo: func(r uint32, p peer.ID) bool { return r < last-1 },
			listReqRound: func(r uint32) uint32 {
				if r >= last-1 {
					asked.Add(1)
				}
				return r
			},
		})
		honest := ln.chain[1:]
		ln.ended(t, honest, 3*time.Minute)
		for _, s := range honest {
			if r := ln.reason(s); r != "complete" {
				t.Errorf("%s: ended %q, not complete", s.ID().ShortString(), r)
			}
		}
		if n := asked.Load(); n > 3 {
			t.Errorf("S_0 asked for the last lists %d times, want at most 3", n)
		}
		t.Logf("S_0 asked for the last lists %d times", asked.Load())
		ln.charges(t, honest, nil)
	})
}

// TestListToOneServer (issue 25): a corrupt S_0 of four delivers the
// final lists of the last two rounds to S_1 alone. S_2 and S_3 assemble
// them from the chain's signatures, before their due: nobody asks S_0
// for them, the epoch completes everywhere and nobody is charged (before:
// S_2 and S_3 waited for the due and asked the chain for each).
func TestListToOneServer(t *testing.T) {
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		s1 := ln.chain[1].ID()
		var asked atomic.Int64
		ln.chain[0].hooks.Store(&serverHooks{
			listTo: func(r uint32, p peer.ID) bool { return r < last-1 || p == s1 },
			listReqRound: func(r uint32) uint32 {
				if r >= last-1 {
					asked.Add(1)
				}
				return r
			},
		})
		ln.ended(t, ln.chain, 3*time.Minute)
		for _, s := range ln.chain {
			if r := ln.reason(s); r != "complete" {
				t.Errorf("%s: ended %q, not complete", s.ID().ShortString(), r)
			}
		}
		if n := asked.Load(); n != 0 {
			t.Errorf("S_0 asked for the last lists %d times, want none", n)
		}
		ln.charges(t, ln.chain[1:], nil)
	})
}

// TestProposalWithheldFromSigner (issue 25): a corrupt S_0 of four
// proposes the lists of the last two rounds to S_1 and S_2 alone and
// delivers none. Past its due S_3 asks the chain for each list, gets
// S_0's signed proposal from a signer, signs it and sends its signature
// to every chain server: each assembles the list, the epoch completes at
// every server and nobody is charged (before, with no proposal handed
// on, S_3 never signed, no list became final and the epoch held for
// good).
func TestProposalWithheldFromSigner(t *testing.T) {
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		s3 := ln.chain[3].ID()
		ln.chain[0].hooks.Store(&serverHooks{
			proposalTo: func(r uint32, p peer.ID) bool { return r < last-1 || p != s3 },
		})
		ln.ended(t, ln.chain, 3*time.Minute)
		for _, s := range ln.chain {
			if r := ln.reason(s); r != "complete" {
				t.Errorf("%s: ended %q, not complete", s.ID().ShortString(), r)
			}
		}
		ln.charges(t, ln.chain[1:], nil)
	})
}

// TestListLateAtOneServer: an honest S_0 whose final lists of the last
// two rounds reach S_1 and S_2 and never S_3 (a link lost them). S_3
// asks the chain for each once it is due and takes it from S_1 or S_2:
// the epoch completes everywhere and nobody is charged (before, S_3 never
// ended the epoch).
func TestListLateAtOneServer(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		s3 := ln.chain[3].ID()
		ln.chain[0].hooks.Store(&serverHooks{listTo: func(r uint32, p peer.ID) bool { return r < last-1 || p != s3 }})
		ln.ended(t, ln.chain, 3*time.Minute)
		for _, s := range ln.chain {
			if r := ln.reason(s); r != "complete" {
				t.Errorf("%s: ended %q, not complete", s.ID().ShortString(), r)
			}
		}
		ln.charges(t, ln.chain, nil)
	})
}

// TestEarlyNoListChargesSigner: a corrupt S_1 signs the abort of a
// missing list of round 2 as soon as it published it, long before the
// list is due. No honest server signs such an abort: S_1 is charged at
// every server, the honest S_0 nowhere (charged on the claim alone, S_0
// would be).
func TestEarlyNoListChargesSigner(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		const q = 2
		s1 := ln.chain[1]
		if err := wait.Until(context.Background(), time.Minute, func() bool {
			s1.mu.Lock()
			defer s1.mu.Unlock()
			x := s1.epochs[ln.id].rounds[q]
			return x != nil && x.pubDone
		}); err != nil {
			t.Fatalf("round %d never published at S_1", q)
		}
		s1.mu.Lock()
		e := s1.epochs[ln.id]
		s1.signNoListLocked(e, q, "round 2: no request list (early)")
		s1.mu.Unlock()
		ln.ended(t, ln.chain, time.Minute)
		ln.charges(t, ln.chain, s1)
	})
}

// signNoListLocked has s end e with the abort of round q's missing list,
// which no honest server signs, as a corrupt one would. Call with s.mu
// held.
func (s *Server) signNoListLocked(e *sepoch, q uint32, reason string) {
	s.endQuiet(e, reason)
	s.evs().BroadcastAbort(evEp(e), wire.AbortNoList, q, reason)
}
