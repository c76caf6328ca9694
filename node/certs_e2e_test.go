package node_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestCatchUpFromCerts: a server that missed several epochs catches up from
// certificates. Of four servers (epochs need three), one is killed
// (its host closed without a clean shutdown) while the others run three
// more epochs, then restarted on its data directory: within 20 s it holds
// the certificate of every number it missed, fetched from a roster server
// and verified one after the other, and its number is past them (before,
// it learnt a number only from the next Prepare, and nothing of the
// epochs between).
func TestCatchUpFromCerts(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs a loopback network")
		}
		const m = 4
		// No probation: a server whose hello came after the first epoch
		// opened would otherwise wait P_prob epochs, and the three left after
		// the kill could not form a chain.
		cn := startCrashNetWith(t, m, node.TestParams(2), func(c *node.ServerConfig) { c.Probation = -1 })
		victim := cn.chain[1]
		other := cn.chain[2]
		ctx := context.Background()
		v := cn.net.Servers[victim]
		if err := wait.Until(ctx, 30*time.Second, func() bool { return v.CertTop() >= 1 }); err != nil {
			t.Fatalf("no epoch certified at the victim: %v", err)
		}
		before := v.CertTop()
		v.Crash()
		o := cn.net.Servers[other]
		if err := wait.Until(ctx, 40*time.Second, func() bool { return o.CertTop() >= before+3 }); err != nil {
			t.Fatalf("the others certified up to %d after the kill at %d: %v", o.CertTop(), before, err)
		}
		target := o.CertTop()
		cn.restart(victim)
		v = cn.net.Servers[victim]
		start := time.Now()
		if err := wait.Until(ctx, 20*time.Second, func() bool { return v.CertTop() >= target && v.LastNumber() >= target }); err != nil {
			t.Fatalf("restarted server certified up to %d (number %d), want %d: %v", v.CertTop(), v.LastNumber(), target, err)
		}
		for n := before + 1; n <= target; n++ {
			if v.CertKind(n) == 0 {
				t.Errorf("restarted server lacks the certificate of %d (missed %d..%d)", n, before+1, target)
			}
		}
		t.Logf("missed %d..%d; caught up in %v", before+1, target, time.Since(start).Round(time.Millisecond))
	})
}

// TestLeaderKillRestart: the leader of a running epoch is killed (its host
// closed first: no goodbye, no abort) and restarted 200 ms later on the
// same data directory and address. The network runs again: a file shared
// after the restart is fetched byte-exact within 45 s, the restarted
// server holds the certificates the others had when it came back (the new
// part: before, nothing was certified), and it leads an epoch again when
// its turn comes, its number caught up from certificates (before, from the
// text of the others' refusals).
func TestLeaderKillRestart(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs a loopback network")
		}
		const m = 4
		cn := startCrashNetWith(t, m, node.TestParams(2), func(c *node.ServerConfig) { c.Probation = -1 })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		victim := -1
		if err := wait.Until(ctx, 40*time.Second, func() bool {
			for _, s := range cn.net.Servers {
				if l := s.RunningLeader(); l != "" {
					for i, x := range cn.net.Servers {
						if x.ID() == l {
							victim = i
						}
					}
					return victim >= 0
				}
			}
			return false
		}); err != nil {
			t.Fatalf("no epoch ran: %v", err)
		}
		cn.net.Servers[victim].Crash()
		killed := time.Now()
		time.Sleep(200 * time.Millisecond)
		var certified uint64
		for i, s := range cn.net.Servers {
			if i != victim {
				certified = max(certified, s.CertTop())
			}
		}
		cn.restart(victim)
		v := cn.net.Servers[victim]
		up, down := (victim+1)%m, (victim+2)%m
		data := nodetest.RandBytes(t, 20<<10)
		gctx, gcancel := context.WithTimeout(ctx, 45*time.Second)
		defer gcancel()
		link, err := cn.net.Clients[up].Share(gctx, bytes.NewReader(data), "after.bin", false)
		if err != nil {
			t.Fatalf("share after the restart: %v", err)
		}
		path, err := cn.net.Clients[down].Get(gctx, link, t.TempDir())
		if err != nil {
			t.Fatalf("get after the restart: %v after %v", err, time.Since(killed).Round(time.Millisecond))
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched bytes differ (%v)", err)
		}
		t.Logf("shared and fetched %d bytes %v after the kill", len(data), time.Since(killed).Round(time.Millisecond))
		if err := wait.Until(ctx, 20*time.Second, func() bool { return v.CertTop() >= certified }); err != nil {
			t.Fatalf("restarted leader certified up to %d, the others %d", v.CertTop(), certified)
		}
		if err := wait.Until(ctx, 40*time.Second, func() bool { return v.Led() > 0 }); err != nil {
			t.Fatalf("restarted leader led no epoch (number %d, certified %d)", v.LastNumber(), v.CertTop())
		}
		t.Logf("restarted leader led again %v after the kill", time.Since(killed).Round(time.Millisecond))
	})
}
