//go:build riffletest

package node

import (
	"context"
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

// TestS0RootRelayAheadOfWindow: S_0's part relayed by the server it
// opened a round at (relayOpening) was checked at its receivers against
// their own admission window (listHigh + W + roundsAhead). S_0, the
// leader that hands out the final lists, gives the newest list to S_1
// first (here: its links to S_2, S_3 hold messages 3 s), and at once its
// part of round q = listHigh(S_1) + W + roundsAhead − 1 to S_1 alone.
// Before: S_2 and S_3, a list behind, refused the relay ("too far ahead"),
// q opened at S_1 alone, went stale there and every honest server charged
// S_1. Now the relay carries S_1's newest list and a part ahead is held
// until the window reaches it: q opens everywhere within a message and S_0
// is charged, nobody else.
func TestS0RootRelayAheadOfWindow(t *testing.T) {
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs, p.RoundIntervalMs = 4000, 2000
		cfgs := make([]ServerConfig, 4)
		fn := startFounded(t, 4, 4, 3, p, func(i int, c *ServerConfig) {
			c.MinServers = 3
			cfgs[i] = *c
		})
		byID := map[peer.ID]*Server{}
		for _, s := range fn.servers {
			byID[s.ID()] = s
		}
		id, chain := runningEpoch(t, fn.servers[0])
		bad, h := byID[chain[0]], byID[chain[1]]
		var top uint32
		if err := wait.Until(context.Background(), time.Minute, func() bool {
			bad.mu.Lock()
			defer bad.mu.Unlock()
			be := bad.epochs[id]
			for r := range be.sentAt {
				top = max(top, r)
			}
			at, ok := be.sentAt[top]
			return ok && time.Since(at) < 300*time.Millisecond && top >= 2
		}); err != nil {
			t.Fatal("S_0 never passed a round on")
		}
		lh := func(s *Server) uint32 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.epochs[id].listHigh
		}
		// S_0 hands its next list to S_1 first.
		net := testMemnet(t)
		for _, o := range chain[2:] {
			net.SetLink(bad.ID(), o, memnet.Link{Latency: 3 * time.Second})
		}
		base := lh(h)
		if err := wait.Until(context.Background(), time.Minute, func() bool { return lh(h) > base }); err != nil {
			t.Fatal("S_1 got no new list")
		}
		h.mu.Lock()
		he := h.epochs[id]
		q := he.listHigh + uint32(he.final.Desc.Params.W) + roundsAhead - 1
		_, already := he.openAt[q]
		h.mu.Unlock()
		t.Logf("listHigh: S_1 %d, S_2 %d, S_3 %d; q = %d", lh(h), lh(byID[chain[2]]), lh(byID[chain[3]]), q)
		if q >= p.Rounds || already {
			t.Fatalf("round %d beyond the epoch or open at S_1 (%v)", q, already)
		}
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r > top }})
		b := wire.Batch{Epoch: id, Round: q, S: 1, Root: [32]byte{7}}
		sig, err := proto.Sign(bad.priv, batchDigest(&b))
		if err != nil {
			t.Fatal(err)
		}
		root := (&wire.Root{Epoch: id, Round: q, S: 1, Root: b.Root, Sig: sig}).Marshal()
		if _, err := transport.Call(context.Background(), bad.h, h.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: root, Timeout: transport.ShortTimeout}); err != nil {
			t.Fatalf("root to S_1: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // virtual: the relay came and went
		for _, o := range chain[2:] {
			net.SetLink(bad.ID(), o, memnet.Link{})
		}
		for i, o := range chain[1:] {
			s := byID[o]
			s.mu.Lock()
			_, open := s.epochs[id].openAt[q]
			s.mu.Unlock()
			t.Logf("S_%d: round %d open: %v (listHigh %d)", i+1, q, open, lh(s))
		}
		time.Sleep(3 * time.Second) // the lists reach S_2, S_3
		// S_0 restarts, forgetting the epoch (as startS0Ahead).
		addr := bad.Addrs()[0].String()
		i := slices.Index(fn.servers, bad)
		bad.Crash()
		cfg := cfgs[i]
		cfg.Listen = []string{addr[:strings.Index(addr, "/p2p/")]}
		for try := 0; try < 20; try++ {
			var s *Server
			if s, err = NewServer(context.Background(), cfg); err == nil {
				t.Cleanup(func() { s.Close() })
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("restart S_0: %v", err)
		}
		honest := chain[1:]
		if err := wait.Until(context.Background(), 5*time.Minute, func() bool {
			for _, p := range honest {
				s := byID[p]
				s.mu.Lock()
				e := s.epochs[id]
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
		time.Sleep(90 * time.Second)
		for i, p := range honest {
			s := byID[p]
			s.mu.Lock()
			reason := s.epochs[id].reason
			s.mu.Unlock()
			counts := s.ref.RefusalCounts()
			t.Logf("S_%d: ended %q; charges%s", i+1, reason, fmtCharges(counts, chain))
			for j, o := range honest {
				if counts[o] != 0 {
					t.Errorf("S_%d charged honest S_%d %d times", i+1, j+1, counts[o])
				}
			}
			if counts[chain[0]] == 0 {
				t.Errorf("S_%d: S_0 not charged", i+1)
			}
		}
	})
}

// TestS0RootAheadHeld: S_0's signed part of a round beyond a server's
// admission window is held there, not refused and not opening the round
// (holdAheadLocked); "opens": it opens the round once the window reaches
// it; "equivocation": a second, different part of the round while held
// ends the epoch as S_0's two roots.
func TestS0RootAheadHeld(t *testing.T) {
	for _, name := range []string{"opens", "equivocation"} {
		t.Run(name, func(t *testing.T) {
			virtual(t, func(t *testing.T) {
				p := testParams(64)
				p.RoundLimitMs, p.RoundIntervalMs = 4000, 2000
				fn := startFounded(t, 4, 4, 3, p, func(i int, c *ServerConfig) { c.MinServers = 3 })
				byID := map[peer.ID]*Server{}
				for _, s := range fn.servers {
					byID[s.ID()] = s
				}
				id, chain := runningEpoch(t, fn.servers[0])
				s0, s2 := byID[chain[0]], byID[chain[2]]
				s2.mu.Lock()
				e := s2.epochs[id]
				q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead
				s2.mu.Unlock()
				if q >= p.Rounds {
					t.Fatalf("round %d beyond the epoch", q)
				}
				send := func(root byte) error {
					b := wire.Batch{Epoch: id, Round: q, S: 1, Root: [32]byte{root}}
					sig, err := proto.Sign(s0.priv, batchDigest(&b))
					if err != nil {
						t.Fatal(err)
					}
					body := (&wire.Root{Epoch: id, Round: q, S: 1, Root: b.Root, Sig: sig}).Marshal()
					_, err = transport.Call(context.Background(), s0.h, s2.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: body, Timeout: transport.ShortTimeout})
					return err
				}
				if err := send(7); err != nil {
					t.Fatalf("S_0's part ahead refused: %v", err)
				}
				s2.mu.Lock()
				_, held := e.aheadS0[q]
				_, open := e.openAt[q]
				admitted := e.admit(q) == nil
				s2.mu.Unlock()
				if admitted {
					t.Fatalf("round %d within the window already", q)
				}
				if !held || open {
					t.Fatalf("S_0's part of round %d ahead: held %v, opened %v", q, held, open)
				}
				if name == "equivocation" {
					if err := send(8); err != nil {
						t.Fatalf("second part: %v", err)
					}
					s2.mu.Lock()
					ended, reason := e.ended, e.reason
					s2.mu.Unlock()
					if !ended || !strings.Contains(reason, "signed two batch roots") {
						t.Fatalf("two parts of S_0 held: ended %v (%q)", ended, reason)
					}
					return
				}
				if err := wait.Until(context.Background(), 5*time.Minute, func() bool {
					s2.mu.Lock()
					defer s2.mu.Unlock()
					return e.admit(q) == nil || e.ended
				}); err != nil {
					t.Fatal("the window never reached the round")
				}
				s2.mu.Lock()
				_, held = e.aheadS0[q]
				_, open = e.openAt[q]
				_, noted := e.roots[rootKey{q, 1}]
				s2.mu.Unlock()
				if held || !open || !noted {
					t.Fatalf("window at round %d: still held %v, opened %v, root kept %v", q, held, open, noted)
				}
			})
		})
	}
}
