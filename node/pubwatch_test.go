//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestPublicationFetchedWhenDue: the last server of four sends its
// publication of round q to the middle servers and never to S_0. Round
// q + 2 opens at the middle servers from their copy, and S_0's part of it is
// due there from then (§3), so S_0 fetches the copy once q's publication
// is due at S_0 (its absenceDue, and fetchGrace more), not only after its
// wait for round q + 2's inputs and the claim's quarter of a round limit.
// Before, the copy came a quarter of a round limit after the due at the
// earliest, and both middle servers were asked at once, sharing S_0's
// link; now it comes within fetchGrace and the transfer, from the one
// middle server asked first.
func TestPublicationFetchedWhenDue(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		p := testParams(8)
		p.RoundLimitMs = 4000
		limit := 4 * time.Second
		bn := startBlameNetParams(t, p, 4, 4, 2, 2)
		s0, mids, bad := bn.servers[0], bn.servers[1:3], bn.servers[3]
		const q = 3
		id := withholdPub(t, bad, q, s0.ID())
		var due, took time.Time
		_ = wait.UntilEvery(context.Background(), time.Minute, 10*time.Millisecond, func() bool { // a zero took fails below
			s0.mu.Lock()
			defer s0.mu.Unlock()
			if e := s0.epochs[id]; e != nil && e.final != nil {
				if d := e.absenceDue(q); d != nil {
					due = d[len(d)-1]
				}
				if x := e.rounds[q]; x != nil && x.batchIn[1] {
					took = time.Now()
				}
			}
			return !took.IsZero()
		})
		time.Sleep(100 * time.Millisecond) // virtual time: a second copy would be under way
		served := 0
		for _, s := range mids {
			s.mu.Lock()
			if e := s.epochs[id]; e != nil && e.final != nil {
				served += e.pubs.Served(q, 0)
			}
			s.mu.Unlock()
		}
		if took.IsZero() || due.IsZero() {
			t.Fatal("S_0 never took round q's publication")
		}
		t.Logf("S_0 took round %d's publication %v after it was due there", q, took.Sub(due))
		if !took.Before(due.Add(limit / 4)) {
			t.Errorf("S_0 fetched the publication %v after its due, not once it was due", took.Sub(due))
		}
		if served != 1 {
			t.Errorf("the middle servers handed S_0 %d copies, want 1 (one asked at a time)", served)
		}
		for _, s := range mids {
			if c := s.ref.RefusalCounts(); c[s0.ID()] != 0 {
				t.Errorf("a middle server charged S_0")
			}
		}
	})
}
