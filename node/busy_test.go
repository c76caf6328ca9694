package node

import (
	"testing"
	"time"
)

// TestBusyFromNumbers (§3, "A leader with bounded power"): two servers run
// epoch 5; A's state changed a moment ago, B's has been quiet for a minute
// (a slow round, well past T_lead and the pace). Whether a Prepare is
// taken follows from its number alone, the same at both: one of 6 (its
// previous certificate is 5's own) is refused while 5 runs, one of 7
// (whose previous certificate shows the group past 5) is not. Before, B
// took the Prepare of 6 and A refused it, by each one's own quiet.
func TestBusyFromNumbers(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		a, b := loneServer(t), loneServer(t)
		defer a.Close()
		defer b.Close()
		for _, s := range []*Server{a, b} {
			e := fixtureEpoch(t, s)
			s.mu.Lock()
			e.v.Desc.Number = 5
			s.mu.Unlock()
		}
		time.Sleep(time.Minute)
		a.mu.Lock()
		a.notify()
		a.mu.Unlock()
		for _, c := range []struct {
			n    uint64
			busy bool
		}{{6, true}, {7, false}} {
			for name, s := range map[string]*Server{"A": a, "B": b} {
				s.mu.Lock()
				err := s.busy(c.n)
				s.mu.Unlock()
				if (err != nil) != c.busy {
					t.Errorf("%s, epoch 5 running, a Prepare of %d: busy %v, want %v", name, c.n, err, c.busy)
				}
			}
		}
	})
}
