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
)

// TestS0RootRelayedCopyOpensEverywhere (§5.2): m = 5, S_0 and S_4 corrupt
// (a minority). As TestS0RootAheadFramesNoOne "stalled", but S_0's part of
// round q reaches S_1 handed on by S_4, a copy, not from S_0. A server
// relays S_0's part whoever handed it over: relaying only a part that came
// from S_0 itself left q open at S_1 alone, and S_1 was charged at every
// honest server.
func TestS0RootRelayedCopyOpensEverywhere(t *testing.T) {
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs, p.RoundIntervalMs = 4000, 2000
		cfgs := make([]ServerConfig, 5)
		fn := startFounded(t, 5, 5, 3, p, func(i int, c *ServerConfig) {
			c.MinServers = 3
			cfgs[i] = *c
		})
		byID := map[peer.ID]*Server{}
		for _, s := range fn.servers {
			byID[s.ID()] = s
		}
		id, chain := runningEpoch(t, fn.servers[0])
		bad, h, acc := byID[chain[0]], byID[chain[1]], byID[chain[4]]
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
		h.mu.Lock()
		he := h.epochs[id]
		q := he.listHigh + uint32(he.final.Desc.Params.W) + roundsAhead - 1
		_, already := he.openAt[q]
		h.mu.Unlock()
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
		// S_4 (corrupt) hands S_0's part to S_1 alone.
		if _, err := transport.Call(context.Background(), acc.h, h.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: root, Timeout: transport.ShortTimeout}); err != nil {
			t.Fatalf("root to S_1: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		for i, o := range chain[1:4] {
			s := byID[o]
			s.mu.Lock()
			_, open := s.epochs[id].openAt[q]
			s.mu.Unlock()
			t.Logf("S_%d: round %d open: %v", i+1, q, open)
		}
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
		honest := chain[1:4]
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
		}
	})
}
