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

// TestHeldPartForwardedToReceiver (§5.2): S_0's signed part of round q,
// shown to S_2 and S_3 only (never to its receiver S_1), reaches S_1
// through forwardRoot when it comes within the window ("in window", the
// onRoot path) and when it is held a round ahead and released by
// openAheadLocked, even where q is open at the holders already
// (publication of q − mixDepth opens q regardless of the window: here set
// directly) and relayOpening does not fire. Before, the held part was
// released without forwardRoot and S_1 never got the root it needs to
// start its wait and claim (lack.go).
func TestHeldPartForwardedToReceiver(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	for _, mode := range []string{"in window", "ahead", "ahead, not open"} {
		t.Run(mode, func(t *testing.T) {
			virtual(t, func(t *testing.T) {
				p := testParams(64)
				p.RoundLimitMs, p.RoundIntervalMs = 4000, 2000
				fn := startFounded(t, 4, 4, 3, p, func(i int, c *ServerConfig) { c.MinServers = 3 })
				byID := map[peer.ID]*Server{}
				for _, s := range fn.servers {
					byID[s.ID()] = s
				}
				id, chain := runningEpoch(t, fn.servers[0])
				s0, s1 := byID[chain[0]], byID[chain[1]]
				s2 := byID[chain[2]]
				s2.mu.Lock()
				e2 := s2.epochs[id]
				q := e2.listHigh + uint32(e2.final.Desc.Params.W) + roundsAhead
				s2.mu.Unlock()
				if mode == "in window" {
					q--
				}
				s0.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r >= q }})
				// q open at every honest server (as if q − mixDepth published).
				for _, o := range chain[1:] {
					if mode == "ahead, not open" {
						break
					}
					s := byID[o]
					s.mu.Lock()
					s.epochs[id].opened(q)
					s.mu.Unlock()
				}
				b := wire.Batch{Epoch: id, Round: q, S: 1, Root: [32]byte{7}}
				sig, err := proto.Sign(s0.priv, batchDigest(&b))
				if err != nil {
					t.Fatal(err)
				}
				body := (&wire.Root{Epoch: id, Round: q, S: 1, Root: b.Root, Sig: sig}).Marshal()
				for _, o := range chain[2:] {
					if _, err := transport.Call(context.Background(), s0.h, o, transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: body, Timeout: transport.ShortTimeout}); err != nil {
						t.Fatalf("root to %s: %v", o.ShortString(), err)
					}
				}
				s2.mu.Lock()
				_, held := e2.aheadS0[q]
				s2.mu.Unlock()
				t.Logf("round %d: held at S_2 %v", q, held)
				// The window reaches q at S_2.
				if err := wait.Until(context.Background(), 5*time.Minute, func() bool {
					s2.mu.Lock()
					defer s2.mu.Unlock()
					_, noted := e2.roots[rootKey{q, 1}]
					return noted || e2.ended
				}); err != nil {
					t.Fatal("S_2 never noted S_0's part")
				}
				time.Sleep(15 * time.Second) // fetchGrace and more
				s1.mu.Lock()
				e1 := s1.epochs[id]
				_, got := e1.roots[rootKey{q, 1}]
				ended, reason := e1.ended, e1.reason
				s1.mu.Unlock()
				t.Logf("S_1: root of S_0 for round %d: %v; ended %v %q", q, got, ended, reason)
				if !got {
					t.Errorf("%s: S_1 never got S_0's part of round %d that S_2 and S_3 hold", mode, q)
				}
			})
		})
	}
}
