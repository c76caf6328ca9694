//go:build riffletest

package node

import (
	"context"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// TestRev40aDryAfterEndFramesPrimary (reviewer rev40a): a corrupt S_0
// (here: the test on S_0's host) ends the epoch (a client silent in round
// 3 gives it the usual "round 3 not filled"), then asks every other
// primary for its dry statements of the rounds without a final list. An
// ended epoch's onions are dropped (dropEnded): before, the honest
// primary, holding no onion any more, signed dry the slots it receipted,
// the clients showed those receipts to every chain server but their
// primary, and every honest server charged the honest primary
// (wire.EvHeld). Now a primary refuses a DryReq once the epoch ended and
// never signs a receipted slot dry.
func TestRev40aDryAfterEndFramesPrimary(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	const silent = 3
	virtual(t, func(t *testing.T) {
		p := testParams(16)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		var (
			mu    sync.Mutex
			fired bool
			id    [32]byte
		)
		bn.clients[1].Hooks.Store(&ClientHooks{Silent: func(epoch [32]byte, r, sl uint32) bool {
			mu.Lock()
			defer mu.Unlock()
			if !fired && r == silent {
				fired, id = true, epoch
			}
			return fired && epoch == id && r == silent
		}})
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return fired
		}); err != nil {
			t.Fatalf("the client never reached round %d", silent)
		}
		mu.Lock()
		eid := id
		mu.Unlock()
		var chain []peer.ID
		var clients []wire.ClientEntry
		byID := map[peer.ID]*Server{}
		for _, s := range bn.servers {
			byID[s.ID()] = s
			s.mu.Lock()
			if e := s.epochs[eid]; e != nil && e.final != nil {
				chain, clients = e.final.Chain, e.final.Desc.Clients
			}
			s.mu.Unlock()
		}
		s0 := byID[chain[0]]
		for _, s := range bn.servers {
			if err := wait.Until(context.Background(), 2*time.Minute, func() bool {
				for _, es := range s.Snapshot().Epochs {
					if es.ID == eid && es.Ended {
						return true
					}
				}
				return false
			}); err != nil {
				t.Fatal("the epoch never ended")
			}
		}
		time.Sleep(300 * time.Millisecond) // virtual: the primaries' dropEnded(false), inside EndGrace (2 s)
		primaries := map[int]bool{}
		for i, c := range clients {
			t.Logf("slot %d: primary S_%d", i, c.Primary)
			if c.Primary != 0 {
				primaries[int(c.Primary)] = true
			}
		}
		if len(primaries) == 0 {
			t.Skip("every slot's primary is S_0 in this epoch")
		}
		s0.mu.Lock()
		lh := s0.epochs[eid].listHigh
		s0.mu.Unlock()
		others := append([]peer.ID(nil), chain[1:]...)
		got := 0
		for j := range primaries {
			for r := lh; r < lh+uint32(max(p.Wire().W, 1)); r++ {
				rep, err := transport.Call(context.Background(), s0.h, chain[j], transport.Request{Proto: ProtoRound, Type: wire.TypeDryReq, Body: (&wire.EpochRef{Epoch: eid, Round: r}).Marshal(), Timeout: transport.ShortTimeout})
				if err != nil {
					t.Logf("S_%d refused the DryReq of round %d: %v", j, r, err)
					continue
				}
				var set wire.DrySet
				if err := set.Unmarshal(rep, proto.LimitsFor(p.Wire(), len(chain))); err != nil {
					t.Fatal(err)
				}
				t.Logf("S_%d signed %d slot(s) dry for round %d after the epoch's end", j, len(set.Dries), r)
				got += len(set.Dries)
				s0.mu.Lock()
				e := s0.epochs[eid]
				for _, d := range set.Dries {
					s0.noteDryLocked(e, d)
				}
				s0.mu.Unlock()
				s0.notifyAll(others, wire.TypeDrySet, set.Marshal())
			}
		}
		time.Sleep(20 * time.Second) // virtual: receipts shown, evidence relayed
		for _, s := range bn.servers {
			for _, rec := range s.ref.Records(false) {
				if rec.Epoch == hex.EncodeToString(eid[:]) && rec.Peer != "" {
					pid, _ := peer.Decode(rec.Peer)
					for j, q := range chain {
						if q == pid && j != 0 {
							t.Errorf("server %s charges honest primary S_%d: %s", s.ID().ShortString(), j, rec.Reason)
						}
					}
				}
			}
		}
		if got == 0 {
			t.Log("no dry statement signed after the end")
		}
	})
}
