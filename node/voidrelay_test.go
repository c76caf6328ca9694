//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestCorruptPairVoidRelayed (the s39 review's attack): a chain of five,
// S_1 and S_2 corrupt. In round q, S_1 passes its batch on to S_2 but
// shows its signed root to S_2 and S_4 only; S_2 passes nothing on, relays
// no root, and both keep their attestations to themselves. Before, S_0
// and S_3 lacked part 1, S_4 held it: with S_2's attestation missing,
// part 1 could still be backed and the void charged nobody, for good.
// Now S_4 relays S_1's root to the chain (relayPart), every honest
// server attests part 2 lacking and part 1 held, and all three charge
// S_2 and no honest server.
func TestCorruptPairVoidRelayed(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		_, byID, id, chain := fiveChain(t)
		s1, bad := byID[chain[1]], byID[chain[2]]
		bad.mu.Lock()
		e := bad.epochs[id]
		q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 2
		bad.mu.Unlock()
		never := func() time.Duration { return time.Hour }
		s1.hooks.Store(&serverHooks{rootTo: func(r uint32, to peer.ID, receiver bool) bool {
			return r != q || (to != chain[0] && to != chain[3])
		}, spreadLate: never})
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r == q },
			rootTo: func(r uint32, _ peer.ID, _ bool) bool { return r != q }, spreadLate: never})
		honest := []peer.ID{chain[0], chain[3], chain[4]}
		charged := func() bool {
			for _, h := range honest {
				if byID[h].ref.RefusalCounts()[chain[2]] == 0 {
					return false
				}
			}
			return true
		}
		err := wait.Until(context.Background(), 5*time.Minute, charged)
		for i, h := range chain {
			s := byID[h]
			s.mu.Lock()
			var lack uint64 = 999
			if ep := s.epochs[id]; ep != nil && ep.attested[q] != nil {
				lack = ep.attested[q].Lacking
			}
			s.mu.Unlock()
			c := s.ref.RefusalCounts()
			t.Logf("S_%d: attested lacking %05b; counts S_0 %d S_1 %d S_2 %d S_3 %d S_4 %d", i, lack, c[chain[0]], c[chain[1]], c[chain[2]], c[chain[3]], c[chain[4]])
		}
		if err != nil {
			t.Errorf("S_2 not charged at every honest server")
		}
		for _, h := range honest {
			c := byID[h].ref.RefusalCounts()
			for _, x := range honest {
				if c[x] > 0 {
					t.Errorf("honest %s charged at %s", x.ShortString(), h.ShortString())
				}
			}
		}
	})
}
