package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
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
}
