//go:build riffletest

package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
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
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		sn := startS0Net(t, 4, 2000)
		id, chain := sn.id, sn.chain
		bad, h := sn.at(0), sn.at(1)
		top := sn.passedTop(t)
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
		q, _ := sn.ahead(t, h)
		t.Logf("listHigh: S_1 %d, S_2 %d, S_3 %d; q = %d", lh(h), lh(sn.at(2)), lh(sn.at(3)), q)
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r > top }})
		if err := sendRoot(bad, h, sn.rootOf(t, q, 7)); err != nil {
			t.Fatalf("root to S_1: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // virtual: the relay came and went
		for _, o := range chain[2:] {
			net.SetLink(bad.ID(), o, memnet.Link{})
		}
		for i, o := range chain[1:] {
			s := sn.byID[o]
			s.mu.Lock()
			_, open := s.epochs[id].openAt[q]
			s.mu.Unlock()
			t.Logf("S_%d: round %d open: %v (listHigh %d)", i+1, q, open, lh(s))
		}
		time.Sleep(3 * time.Second) // the lists reach S_2, S_3
		// S_0 restarts, forgetting the epoch (as startS0Ahead).
		sn.restartS0(t)
		honest := chain[1:]
		sn.waitEnded(t, honest)
		sn.checkCharges(t, honest, true)
	})
}

// TestS0RootAheadHeld: S_0's signed part of a round beyond a server's
// admission window is held there, not refused and not opening the round
// (holdAheadLocked); "opens": it opens the round once the window reaches
// it; "equivocation": a second, different part of the round while held
// ends the epoch as S_0's two roots.
func TestS0RootAheadHeld(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	for _, name := range []string{"opens", "equivocation"} {
		t.Run(name, func(t *testing.T) {
			virtual(t, func(t *testing.T) {
				sn := startS0Net(t, 4, 2000)
				id, s2 := sn.id, sn.at(2)
				s2.mu.Lock()
				e := s2.epochs[id]
				q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead
				s2.mu.Unlock()
				if q >= sn.p.Rounds {
					t.Fatalf("round %d beyond the epoch", q)
				}
				send := func(root byte) error { return sendRoot(sn.at(0), s2, sn.rootOf(t, q, root)) }
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
