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

// TestUnattestableAbortCharged (the rev41a review's attack, m = 3): a
// corrupt S_0 signs an abort for the missing publication of a round no
// honest server had open, beyond the admission window or past the
// epoch's rounds, and every server ends the epoch. Held until no
// attestation to come could move it, the verdict waited for good: no
// honest server attested such a round. Now each attests it with nothing
// lacking once the epoch ended (attestable, roundAttestLocked), and every
// server charges the signer.
func TestUnattestableAbortCharged(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	for _, where := range []string{"beyond window", "past rounds"} {
		t.Run(where, func(t *testing.T) {
			virtual(t, func(t *testing.T) {
				fn := startFounded(t, 3, 3, 3, testParams(16), nil)
				byID := map[peer.ID]*Server{}
				for _, s := range fn.servers {
					byID[s.ID()] = s
				}
				id, chain := runningEpoch(t, fn.servers[0])
				culprit := byID[chain[0]]
				culprit.mu.Lock()
				e := culprit.epochs[id]
				q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead + 3
				if where == "past rounds" {
					q = e.final.Desc.Params.Rounds + 7
				}
				culprit.endNoPub(e, q, fmt.Sprintf("round %d: no publication", q))
				culprit.mu.Unlock()
				e0 := fn.epochs()
				took := fn.waitEpochs(t, e0, 2*time.Minute)
				// Each server's charge, waited for a minute: any attestation
				// still to come.
				wait.Until(context.Background(), time.Minute, func() bool {
					for _, s := range fn.servers {
						if s.ref.RefusalCounts()[culprit.ID()] < 1 {
							return false
						}
					}
					return true
				}) // on a timeout the checks below say where it is missing
				for i, s := range fn.servers {
					counts := s.ref.RefusalCounts()
					t.Logf("server %d: counts of the signer %d", i, counts[culprit.ID()])
					if counts[culprit.ID()] < 1 {
						t.Errorf("server %d: the abort of round %d (%s) ended the epoch and charged nobody", i, q, where)
					}
				}
				t.Logf("abort of round %d (%s): next epoch in %v", q, where, took.Round(100*time.Millisecond))
			})
		})
	}
}
