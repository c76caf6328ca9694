//go:build riffletest

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestOneSignerCannotSplitList (issue 25, rev43 F2): one corrupt signer,
// S_2 of four, honest S_0. S_2 signs S_0's proposal of round 2, sends its
// signature to S_1 only and keeps its answer from S_0 for 3 minutes. S_1
// holds the proposal and every signature and assembles the final list;
// it delivers it to the chain, so S_0 and S_3 hold it too and S_0 does
// not end the epoch for a refused list. Before, S_1 alone held round 2's
// list: the honest servers disagreed on it and S_1 refused S_0's
// closing record.
func TestOneSignerCannotSplitList(t *testing.T) {
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		const r = 2
		s1 := ln.chain[1].ID()
		ln.chain[2].hooks.Store(&serverHooks{
			listSigTo: func(p peer.ID) bool { return p == s1 },
			leaderLate: func(q uint32) time.Duration {
				if q == r {
					return 3 * time.Minute
				}
				return 0
			},
		})
		honest := []int{0, 1, 3}
		listed := map[int]string{}
		if err := wait.Until(context.Background(), 6*time.Minute, func() bool {
			for _, i := range honest {
				s := ln.chain[i]
				s.mu.Lock()
				if e := s.epochs[ln.id]; e != nil && e.ended && listed[i] == "" {
					x := e.rounds[r]
					listed[i] = fmt.Sprintf("round %d listed %v", r, x != nil && x.list != nil)
					t.Logf("S_%d: ended %q, %s", i, e.reason, listed[i])
				}
				s.mu.Unlock()
			}
			return len(listed) == len(honest)
		}); err != nil {
			t.Fatalf("the epoch did not end at every honest server: %v", listed)
		}
		for _, i := range honest {
			if want := fmt.Sprintf("round %d listed true", r); listed[i] != want {
				t.Errorf("S_%d: %s, want %s", i, listed[i], want)
			}
		}
	})
}
