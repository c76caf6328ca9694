//go:build riffletest

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestBudgetDropEvidenceShared (§3 refusal budget): a server that missed
// the two signed aborts that leave a server out of the chains (it was
// outside their chains) gets them from the leader that leaves that server
// out, before its Prepare, and so derives the same chain and leader as the
// others. Without them it kept the server in its chain, the leaders split,
// neither split's timeout reached a quorum, and the group stayed at one
// number for good, and with it the budget window, counted in numbers, that
// would have ended the split (TestSwarm seed 809: a server out for its own
// budget missed the aborts of the epochs run without it).
func TestBudgetDropEvidenceShared(t *testing.T) {
	t.Parallel()
	long(t) // whole networks over many epochs: the full pass runs it, the race pass would take half a minute
	for k := range 3 {
		t.Run(fmt.Sprintf("u%d", k), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				bn := startBlameNet(t, 4, 3, 4, 2, func(c *ClientConfig) { c.AcceptBudgetDrops = true })
				bad := bn.servers[3]
				aborted := abortEveryEpoch(t, bad)
				honest := bn.servers[:3]
				ctx := context.Background()
				if err := wait.Until(ctx, 60*time.Second, func() bool {
					for _, s := range honest {
						if !s.refusalOut(bad.h.ID()) {
							return false
						}
					}
					return true
				}); err != nil {
					t.Fatalf("the aborting server is not left out (it ended epochs %v)", aborted())
				}
				// u forgets the aborts: what a server outside their chains
				// holds.
				u := honest[k]
				forgetAborts(u, bad.h.ID())
				from := u.lastNumber()
				if err := wait.Until(ctx, 2*time.Minute, func() bool { return u.refusalOut(bad.h.ID()) }); err != nil {
					t.Fatalf("the server that missed the aborts never learnt them (number %d, from %d)", u.lastNumber(), from)
				}
				// Epochs run without the aborting server, u's included.
				if err := wait.Until(ctx, 2*time.Minute, func() bool { return completedWithout(u, bad.h.ID(), from) }); err != nil {
					t.Fatalf("no epoch completed without the aborting server after number %d (now %d)", from, u.lastNumber())
				}
			})
		})
	}
}

// forgetAborts drops every abort counted at s against p.
func forgetAborts(s *Server, p peer.ID) {
	s.ref.Forget(p)
}

// completedWithout reports whether an epoch numbered above from completed
// at s with a chain without p.
func completedWithout(s *Server, p peer.ID, from uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if e.ended && e.reason == "complete" && e.v.Desc.Number > from && !proto.InChain(e.v.Chain, p) {
			return true
		}
	}
	return false
}

// TestTwoOutForBudget (§3 refusal budget): two servers out for their
// budget at once, and the chain without them below --min-servers: both
// stay in, at every server, themselves included. Each used to keep itself
// in its own chain and leave the other out (a chain of min-servers, so no
// one was added back), refuse the others' chain with both and lead its
// own, which the others refused: no epoch ran until the windows ended, and
// these, counted in numbers, ended only if timeouts moved the numbers
// (TestSwarm seed 809, once the first fix let it past its first stall).
func TestTwoOutForBudget(t *testing.T) {
	t.Parallel()
	long(t) // whole networks over many epochs: the full pass runs it, the race pass would take half a minute
	virtual(t, func(t *testing.T) {
		bn := startBlameNet(t, 4, 3, 4, 2, func(c *ClientConfig) { c.AcceptBudgetDrops = true })
		a, b := bn.servers[0], bn.servers[1]
		ctx := context.Background()
		outAt := func(p peer.ID, at []*Server) func() bool {
			return func() bool {
				for _, s := range at {
					if !s.refusalOut(p) {
						return false
					}
				}
				return true
			}
		}
		abortedA := abortEpochs(t, a, 2)
		if err := wait.Until(ctx, 60*time.Second, outAt(a.h.ID(), bn.servers)); err != nil {
			t.Fatalf("a is not out (it ended epochs %v)", abortedA())
		}
		abortedB := abortEpochs(t, b, 2)
		if err := wait.Until(ctx, 60*time.Second, outAt(b.h.ID(), bn.servers[1:])); err != nil {
			t.Fatalf("b is not out (it ended epochs %v, a ended %v)", abortedB(), abortedA())
		}
		if !a.refusalOut(a.h.ID()) {
			t.Skipf("a's window ended before b's second abort (a ended %v, b %v)", abortedA(), abortedB())
		}
		from := bn.servers[2].lastNumber()
		// An epoch with both completes while both are out.
		if err := wait.Until(ctx, 2*time.Minute, func() bool {
			for _, s := range bn.servers[2:] {
				s.mu.Lock()
				for _, e := range s.epochs {
					if e.ended && e.reason == "complete" && e.v.Desc.Number > from && proto.InChain(e.v.Chain, a.h.ID()) && proto.InChain(e.v.Chain, b.h.ID()) {
						s.mu.Unlock()
						return true
					}
				}
				s.mu.Unlock()
			}
			return false
		}); err != nil {
			var views []string
			for _, s := range bn.servers {
				views = append(views, fmt.Sprintf("%d servers at number %d", len(s.chain()), s.lastNumber()))
			}
			t.Fatalf("no epoch completed after number %d with both servers out (a ended %v, b %v): chains %v", from, abortedA(), abortedB(), views)
		}
	})
}
