//go:build riffletest

package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// TestS0RootAheadFramesNoOne (issue 25, the second review of 6a57400): a
// corrupt S_0 of four signs its part of a round q a few rounds ahead,
// sends it to S_1 alone and then signs nothing more of the epoch. S_0's
// part opens q (roots.go): at S_1 alone, so q went stale at S_1 first (the
// dues count from the opening), S_1 signed the abort of q's missing
// publication, the others, where q was not open or its parts not yet due,
// attested nothing, and S_1, honest, was charged at every server
// (blame.ChargeOf falls back to the signer). "stalled": S_0 passes
// nothing on after its newest part, so the rounds before q stall too;
// "settled": S_0 passes every round below q on, at a pace that opens q at
// the others by the publication of q − 2 after S_1 but before S_1's abort.
// Now the server S_0's part opens a round at relays the part to the chain
// (relayOpening): q opens at every honest server alike and S_0, whose
// batch nobody got, is charged, and nobody else. In both S_1 leads the
// epoch, whose wait for the end did not check for stale rounds at all
// before (leader.go): its reason says it ended the epoch itself.
// "stalled, slow": S_0 stays up on links that hold every message ten
// minutes, so every ask of S_0 runs to its caller's bound (the stale
// round's publication asked for a round limit, stale.go): nobody honest
// is charged, and the epoch ends a round limit after the stale instant.
func TestS0RootAheadFramesNoOne(t *testing.T) {
	for _, c := range []struct {
		name    string
		settle  bool
		ivMs    uint32
		slowLag time.Duration // S_0's links, for "slow"; zero: S_0 restarts
	}{
		{"stalled", false, 2000, 0},
		{"settled", true, 5000, 0},
		{"stalled, slow", false, 2000, 10 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) { s0RootAhead(t, c.settle, c.ivMs, c.slowLag) })
	}
}

// s0Ahead is the set-up of TestS0RootAheadFramesNoOne after S_0 went:
// q is the round of S_0's part that S_1 alone got, num the epoch's number.
type s0Ahead struct {
	*s0Net
	q   uint32
	num uint64
}

func s0RootAhead(t *testing.T, settle bool, ivMs uint32, slowLag time.Duration) {
	virtual(t, func(t *testing.T) {
		sa := startS0Ahead(t, settle, ivMs, slowLag)
		honest := sa.chain[1:]
		gone := time.Now()
		sa.waitEnded(t, honest)
		t.Logf("the epoch ended at the honest servers %v after S_0 went", time.Since(gone))
		reasons := sa.checkCharges(t, honest, slowLag == 0)
		leader := proto.LeaderOf(sa.num, sa.chain)
		for i, p := range honest {
			if p == leader && !strings.HasPrefix(reasons[i], "round ") {
				t.Errorf("S_%d, the leader, did not end the stale epoch itself: %q", i+1, reasons[i])
			}
		}
	})
}

// TestStaleEndKeepsNotes: a server that ends an epoch for a missing
// publication itself (endNoPub; the stale rule, stale.go) signs its abort
// AbortSettle later, and the end dropped the round's relay notes
// meanwhile (dropEnded): S_2, whose fetch of S_0's batch for S_1's note
// had failed, attested S_0's part held, and with S_3 doing the same, S_1
// was charged for the round. TestS0RootAheadFramesNoOne's "stalled", S_2
// ending round q at once: its attestation now lacks part 0.
func TestStaleEndKeepsNotes(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		sa := startS0Ahead(t, false, 2000, 0)
		s2 := sa.at(2)
		s2.mu.Lock()
		e := s2.epochs[sa.id]
		s2.mu.Unlock()
		if err := wait.Until(context.Background(), time.Minute, func() bool {
			s2.mu.Lock()
			defer s2.mu.Unlock()
			at, miss := e.bodyMissing(sa.q, 0)
			return miss && !time.Now().Before(at) || e.ended
		}); err != nil {
			t.Fatal("S_0's batch never due at S_2")
		}
		s2.mu.Lock()
		if e.ended {
			s2.mu.Unlock()
			t.Fatalf("the epoch ended at S_2 first: %q", e.reason)
		}
		s2.endNoPub(e, sa.q, fmt.Sprintf("round %d stale (test)", sa.q))
		s2.mu.Unlock()
		time.Sleep(5 * time.Second) // virtual: past AbortSettle
		s2.mu.Lock()
		a := e.attested[sa.q]
		s2.mu.Unlock()
		if a == nil {
			t.Fatal("S_2 attested nothing of round q")
		}
		t.Logf("S_2 attests %04b of round %d", a.Lacking, sa.q)
		if a.Lacking&1 == 0 {
			t.Errorf("S_2 attested S_0's part of round %d held (%04b), which it never got", sa.q, a.Lacking)
		}
	})
}

// startS0Ahead starts four servers, has S_0 send its part of a round
// ahead to S_1 alone, and has S_0 go (by settle and slowLag, as
// TestS0RootAheadFramesNoOne's cases say).
func startS0Ahead(t *testing.T, settle bool, ivMs uint32, slowLag time.Duration) *s0Ahead {
	t.Helper()
	sn := startS0Net(t, 4, ivMs)
	id, chain := sn.id, sn.chain
	bad, h := sn.at(0), sn.at(1)
	top := sn.passedTop(t)
	q, num := sn.ahead(t, h)
	if settle {
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r >= q }})
	} else {
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r > top }})
	}
	if err := sendRoot(bad, h, sn.rootOf(t, q, 7)); err != nil {
		t.Fatalf("root to S_1: %v", err)
	}
	t.Logf("S_0 sent its part of round %d to S_1 alone (its newest part: round %d)", q, top)
	if settle {
		// S_0 passes the rounds below q on until round q − 1 (or
		// until the epoch ended, q stale first), then goes.
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool {
			bad.mu.Lock()
			defer bad.mu.Unlock()
			be := bad.epochs[id]
			_, ok := be.sentAt[q-1]
			return ok || be.ended
		}); err != nil {
			t.Fatal("S_0 never passed round q − 1 on")
		}
	}
	if slowLag > 0 {
		net := testMemnet(t)
		for _, o := range chain[1:] {
			net.SetLink(bad.ID(), o, memnet.Link{Latency: slowLag})
			net.SetLink(o, bad.ID(), memnet.Link{Latency: slowLag})
		}
		// Its own epoch goes too: it signs nothing more.
		bad.mu.Lock()
		bad.epochs[id].ended = true
		bad.mu.Unlock()
	} else {
		// A restart that forgot the epoch: S_0 stays in the roster,
		// answers at once and signs nothing of it.
		sn.restartS0(t)
	}
	return &s0Ahead{s0Net: sn, q: q, num: num}
}

// s0Net is the set-up the tests of S_0's part of a round share
// (stale_s0root_test.go, stale_relayadmit_test.go,
// stale_relaycopy_test.go): m founded servers that need three, a round
// limit of 4 s, rounds ivMs apart, and a running epoch.
type s0Net struct {
	p     Params
	fn    *foundedNet
	cfgs  []ServerConfig
	byID  map[peer.ID]*Server
	id    [32]byte
	chain []peer.ID
}

func startS0Net(t *testing.T, m int, ivMs uint32) *s0Net {
	t.Helper()
	p := testParams(64)
	p.RoundLimitMs, p.RoundIntervalMs = 4000, ivMs
	sn := &s0Net{p: p, cfgs: make([]ServerConfig, m), byID: map[peer.ID]*Server{}}
	sn.fn = startFounded(t, m, m, 3, p, func(i int, c *ServerConfig) {
		c.MinServers = 3
		sn.cfgs[i] = *c
	})
	for _, s := range sn.fn.servers {
		sn.byID[s.ID()] = s
	}
	sn.id, sn.chain = runningEpoch(t, sn.fn.servers[0])
	return sn
}

// at is the chain's S_i.
func (sn *s0Net) at(i int) *Server { return sn.byID[sn.chain[i]] }

// passedTop waits until S_0 has just passed on its part of its newest
// round, at least round 2, and returns that round.
func (sn *s0Net) passedTop(t *testing.T) uint32 {
	t.Helper()
	bad := sn.at(0)
	var top uint32
	if err := wait.Until(context.Background(), time.Minute, func() bool {
		bad.mu.Lock()
		defer bad.mu.Unlock()
		be := bad.epochs[sn.id]
		for r := range be.sentAt {
			top = max(top, r)
		}
		at, ok := be.sentAt[top]
		return ok && time.Since(at) < 300*time.Millisecond && top >= 2
	}); err != nil {
		t.Fatal("S_0 never passed a round on")
	}
	return top
}

// ahead is the last round of s's admission window, listHigh + W +
// roundsAhead − 1, which must lie in the epoch and not be open at s yet,
// and the epoch's number.
func (sn *s0Net) ahead(t *testing.T, s *Server) (q uint32, num uint64) {
	t.Helper()
	s.mu.Lock()
	e := s.epochs[sn.id]
	q = e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 1
	_, already := e.openAt[q]
	num = e.final.Desc.Number
	s.mu.Unlock()
	if q >= sn.p.Rounds || already {
		t.Fatalf("round %d beyond the epoch or open at S_1 (%v)", q, already)
	}
	return q, num
}

// rootOf is S_0's signed part of round q with batch root {root}, as a
// Root message.
func (sn *s0Net) rootOf(t *testing.T, q uint32, root byte) []byte {
	t.Helper()
	b := wire.Batch{Epoch: sn.id, Round: q, S: 1, Root: [32]byte{root}}
	sig, err := proto.Sign(sn.at(0).priv, batchDigest(&b))
	if err != nil {
		t.Fatal(err)
	}
	return (&wire.Root{Epoch: sn.id, Round: q, S: 1, Root: b.Root, Sig: sig}).Marshal()
}

// sendRoot hands the Root message body from server from to server to.
func sendRoot(from, to *Server, body []byte) error {
	_, err := transport.Call(context.Background(), from.h, to.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: body, Timeout: transport.ShortTimeout})
	return err
}

// restartS0 crashes S_0 and starts it again at its address: it stays in
// the roster, answers at once and has forgotten the epoch.
func (sn *s0Net) restartS0(t *testing.T) {
	t.Helper()
	bad := sn.at(0)
	addr := bad.Addrs()[0].String()
	cfg := sn.cfgs[slices.Index(sn.fn.servers, bad)]
	bad.Crash()
	cfg.Listen = []string{addr[:strings.Index(addr, "/p2p/")]}
	var err error
	// Until the port is released.
	if werr := wait.Until(context.Background(), 2*time.Second, func() bool {
		var s *Server
		if s, err = NewServer(context.Background(), cfg); err != nil {
			return false
		}
		t.Cleanup(func() { s.Close() })
		return true
	}); werr != nil {
		t.Fatalf("restart S_0: %v", err)
	}
}

// waitEnded waits until the epoch ended at every server of ps.
func (sn *s0Net) waitEnded(t *testing.T, ps []peer.ID) {
	t.Helper()
	if err := wait.Until(context.Background(), 5*time.Minute, func() bool {
		for _, p := range ps {
			s := sn.byID[p]
			s.mu.Lock()
			e := s.epochs[sn.id]
			over := e == nil || e.ended
			s.mu.Unlock()
			if !over {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal("the epoch did not end at the honest servers")
	}
}

// checkCharges lets the evidence relays settle (90 s, virtual), then
// checks that no server of honest charges another of them and, with s0,
// that each charges S_0. It returns why the epoch ended at each. S_0's
// charge is waited for with the network running; then the clients
// leave, so that the settle runs no epoch (in virtual time each one run
// in it was CPU) and costs only the relays of the evidence.
func (sn *s0Net) checkCharges(t *testing.T, honest []peer.ID, s0 bool) []string {
	t.Helper()
	if s0 {
		wait.Until(context.Background(), 90*time.Second, func() bool {
			for _, p := range honest {
				if sn.byID[p].ref.RefusalCounts()[sn.chain[0]] == 0 {
					return false
				}
			}
			return true
		}) // on a timeout the checks below say where it is missing
	}
	for _, c := range sn.fn.clients {
		c.Close()
	}
	time.Sleep(90 * time.Second)
	var reasons []string
	for i, p := range honest {
		s := sn.byID[p]
		s.mu.Lock()
		reason := s.epochs[sn.id].reason
		s.mu.Unlock()
		reasons = append(reasons, reason)
		counts := s.ref.RefusalCounts()
		t.Logf("S_%d: ended %q; charges%s", i+1, reason, fmtCharges(counts, sn.chain))
		for j, o := range honest {
			if counts[o] != 0 {
				t.Errorf("S_%d charged honest S_%d %d times", i+1, j+1, counts[o])
			}
		}
		if s0 && counts[sn.chain[0]] == 0 {
			t.Errorf("S_%d: S_0 not charged", i+1)
		}
	}
	return reasons
}

func fmtCharges(counts map[peer.ID]int, chain []peer.ID) string {
	out := ""
	for j, p := range chain {
		out += fmt.Sprintf(" S_%d:%d", j, counts[p])
	}
	return out
}
