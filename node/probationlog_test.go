//go:build riffletest

package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestCertifiedProbationAgrees (§3 "Who may serve", issue 25): a
// newcomer says hello to a group of four; one server restarts two numbers
// later. At every number both hold the same certificates, that server
// and one that ran all along agree on whether the newcomer may serve, and
// it joins a chain P_prob numbers after a certificate first recorded it,
// not before. Before, probation counted from each server's own first
// sighting, kept in memory: the restarted server sighted the newcomer
// again and kept it out the numbers it had missed longer than the others.
func TestCertifiedProbationAgrees(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		const prob = 3
		p := testParams(2)
		cfgs := map[int]ServerConfig{}
		fn := startFounded(t, 4, 2, 2, p, func(i int, c *ServerConfig) {
			c.MinServers, c.Probation = 3, prob
			cfgs[i] = *c
		})
		ctx := context.Background()
		a := fn.servers[0]
		until(t, ctx, 2*time.Minute, func() bool { return a.cert.Top() >= 2 }, "no number 2")
		xc := cfgs[2]
		xc.DataDir, xc.Nick, xc.Peers = t.TempDir(), "x", fn.addrs
		x, err := NewServer(ctx, xc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		until(t, ctx, time.Minute, func() bool {
			for _, s := range fn.servers {
				if s.roster.get(x.ID()) == nil {
					return false
				}
			}
			return true
		}, "the newcomer's hello")
		hello := a.cert.Top()
		// One server restarts two numbers later: what it had sighted is
		// gone, its records are not.
		until(t, ctx, 2*time.Minute, func() bool { return a.cert.Top() >= hello+2 }, "no numbers after the hello")
		fn.servers[3].Close() // a server no client has as its primary
		b, err := NewServer(ctx, cfgs[3])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		t.Logf("the newcomer's hello at number %d; a server restarted at %d", hello, a.cert.Top())
		var agreed []string
		until(t, ctx, 4*time.Minute, func() bool {
			ta, tb := a.cert.Top(), b.cert.Top()
			ea, eb := a.eligible(x.ID()), b.eligible(x.ID())
			if ta == tb && a.cert.Top() == ta && b.cert.Top() == tb {
				if (ea == nil) != (eb == nil) {
					t.Fatalf("at number %d the servers disagree on the newcomer: %v against %v", ta+1, ea, eb)
				}
				if s := fmt.Sprintf("%d:%v", ta+1, ea == nil); !slices.Contains(agreed, s) {
					agreed = append(agreed, s)
				}
			}
			for _, s := range []*Server{a, b} {
				if slices.Contains(s.OpenChain(), x.ID()) {
					if n := s.lastNumber(); n < hello+1+prob {
						t.Fatalf("the newcomer joined number %d, its hello at %d, P_prob %d", n, hello, prob)
					}
					t.Logf("the newcomer joined number %d; eligibility agreed at %v", s.lastNumber(), agreed)
					return true
				}
			}
			return false
		}, "the newcomer joined no chain")
	})
}
