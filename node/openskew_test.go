//go:build riffletest

package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestLatePublicationFramesFirst: the last server of three skews where
// round q opens. It sends its publication of round q − 2 to S_0 at once
// and to the middle server a second later, then keeps round q's
// publication to itself. With W = 3 the onions of q are in before q − 2's
// list, so S_0 mixes q at once and its batch reaches the middle server
// before q opens there by the publication. S_0 has q signed void a round
// limit later. Before, the middle server counted the dues of q from its
// late publication, with S_0's part taken as come a round limit after
// that: the void came before its last due, it attested nothing, and both
// honest servers charged S_0, the void's proposer. Now S_0's signed part
// of q opens q wherever it comes first: the middle server's dues are
// those of S_0, it attests the publication lacking, and both charge the
// last server.
func TestLatePublicationFramesFirst(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(16)
		p.W, p.RoundLimitMs = 3, 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		s0, mid, bad := bn.servers[0], bn.servers[1], bn.servers[2]
		const q = 4
		var mu sync.Mutex
		var epoch [32]byte // the attacked epoch: the first whose round q−2 is sent
		var fired bool
		attacked := func(r uint32) bool {
			if r != q && r != q-2 {
				return false
			}
			var cur [32]byte
			bad.mu.Lock()
			for id, e := range bad.epochs {
				if !e.ended && e.final != nil {
					cur = id
				}
			}
			bad.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			if !fired && r == q-2 {
				fired, epoch = true, cur
			}
			return fired && cur == epoch
		}
		bad.hooks.Store(&serverHooks{
			withhold: func(r uint32) bool { return r == q && attacked(r) },
			pubLate: func(r uint32, to peer.ID) time.Duration {
				if r == q-2 && to == mid.ID() && attacked(r) {
					return time.Second
				}
				return 0
			},
		})
		void := func(s *Server) bool {
			mu.Lock()
			id := epoch
			mu.Unlock()
			s.mu.Lock()
			defer s.mu.Unlock()
			e := s.epochs[id]
			return e != nil && e.rounds[q] != nil && e.rounds[q].void
		}
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool { return void(s0) && void(mid) }); err != nil {
			t.Fatalf("round %d not made void at both honest servers", q)
		}
		charged := func() bool {
			for _, s := range []*Server{s0, mid} {
				if s.refusalCounts()[bad.ID()] < 1 {
					return false
				}
			}
			return true
		}
		_ = wait.Until(context.Background(), 20*time.Second, charged)
		time.Sleep(5 * time.Second) // virtual time: relays settle (a charge of S_0 may come late)
		for i, s := range []*Server{s0, mid} {
			c := s.refusalCounts()
			t.Logf("server %d counts: S_0 %d, middle %d, last %d", i, c[s0.ID()], c[mid.ID()], c[bad.ID()])
			if c[s0.ID()] != 0 || c[mid.ID()] != 0 {
				t.Errorf("server %d charged an honest server for the publication the last server kept", i)
			}
			if c[bad.ID()] < 1 {
				t.Errorf("server %d did not charge the last server", i)
			}
		}
	})
}
