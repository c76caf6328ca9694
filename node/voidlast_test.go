//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestVoidLastRounds: the last server of a three-server chain (three
// needed) keeps the publication of the epoch's last round, or of its last
// two, in every epoch. No later round's wait covers them, so S_0 waits a
// round limit for each after the last round is mixed: the first missing
// one is signed void, and a void last round ends the epoch as complete;
// a second missing one ends the epoch with an abort for the missing
// publication. Either way the next epoch starts and the network goes on
// (the server out of its refusal budget stays in, the chain would fall
// below three otherwise); only the last server is charged, and nobody is
// named. Before, the first such epoch never ended: every server and
// client of the chain waited for the publication for ever.
func TestVoidLastRounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		last   int    // how many of the last rounds are kept
		listed int    // rounds with a list at the epoch's end
		reason string // the epoch's end at S_0
	}{
		{"last round", 1, 4, "complete"},
		{"last two rounds", 2, 3, "epoch's end: no publication of round 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				p := testParams(4)
				p.RoundLimitMs = 3000
				bn := startBlameNetParams(t, p, 3, 3, 2, 2)
				bad := bn.servers[2]
				bad.hooks.Store(&serverHooks{withhold: func(r uint32) bool { return r+uint32(tc.last) >= p.Rounds }})
				const want = 2
				ended := func(s *Server) []EpochSnapshot {
					var out []EpochSnapshot
					for _, es := range s.Snapshot().Epochs {
						if es.Ended {
							out = append(out, es)
						}
					}
					return out
				}
				ctx := context.Background()
				if err := wait.Until(ctx, 40*time.Second, func() bool { return len(ended(bn.servers[0])) >= want }); err != nil {
					for _, es := range bn.servers[0].Snapshot().Epochs {
						t.Logf("epoch %d: %d of %d rounds listed, ended %v (%q)", es.Number, es.Listed, es.Rounds, es.Ended, es.Reason)
					}
					t.Fatalf("fewer than %d epochs ended: %v", want, err)
				}
				for _, es := range ended(bn.servers[0]) {
					if es.Reason != tc.reason || es.Listed != tc.listed {
						t.Fatalf("epoch %d ended after %d of %d rounds listed (%q), want %d (%q)", es.Number, es.Listed, es.Rounds, es.Reason, tc.listed, tc.reason)
					}
				}
				// The charge comes with the void or the abort; the abort's
				// relay may still be on its way.
				for i, s := range bn.servers[:2] {
					if err := wait.Until(ctx, 10*time.Second, func() bool { return s.ref.RefusalCounts()[bad.h.ID()] >= want }); err != nil {
						t.Fatalf("server %d charges the last server %d times", i, s.ref.RefusalCounts()[bad.h.ID()])
					}
					for p, n := range s.ref.RefusalCounts() {
						if p != bad.h.ID() {
							t.Fatalf("server %d charges honest server %s with %d aborts", i, p.ShortString(), n)
						}
					}
					recs, err := s.rb.Records()
					if err != nil {
						t.Fatal(err)
					}
					if len(recs) > 0 {
						t.Fatalf("a kept publication named someone: %+v", recs[0])
					}
				}
			})
		})
	}
}
