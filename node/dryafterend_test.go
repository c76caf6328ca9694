//go:build riffletest

package node

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// TestDryReqAfterEndChargesNoPrimary (reviewer rev40a): a
// corrupt S_0 (here: the test on S_0's host) ends the epoch (a client
// silent in round 3 gives it the usual "round 3 not filled"), then asks
// every other primary for its dry statements of the rounds without a final
// list. An ended epoch's onions are dropped (dropEnded): before, the
// honest primary, holding no onion any more, signed dry the slots it
// receipted, the clients showed those receipts to every chain server but
// their primary, and every honest server charged the honest primary
// (wire.EvHeld). Now a primary refuses a DryReq once the epoch ended and
// never signs a receipted slot dry.
func TestDryReqAfterEndChargesNoPrimary(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	const silent = 3
	virtual(t, func(t *testing.T) {
		bn, p := startHeldNet(t)
		eid, _ := silentClient(t, bn, silent)
		chain, clients, byID := finalOf(bn, eid)
		s0 := byID[chain[0]]
		for _, s := range bn.servers {
			endedAt(t, s, eid, "the epoch never ended")
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
