package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchSmall runs `riffle bench` on a tiny network: the ceilings'
// line, the header, one row for n = 2 with a measured round time over at
// least two rounds and the baseline beside it, and the stages' ratios.
func TestBenchSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a loopback network")
	}
	out, errOut, err := runBin(t, cleanEnv(t), "bench", "--clients", "2", "--rounds", "1", "--chunk-size", "16384")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "machine ceilings") || !strings.Contains(lines[2], "vs baseline") {
		t.Fatalf("bench printed:\n%s", out)
	}
	for _, c := range []string{"AES-256-GCM", "SHA-256", "XOR in cache", "memcpy", "loopback libp2p stream"} {
		if !strings.Contains(lines[0], c) {
			t.Errorf("ceilings lack %s: %q", c, lines[0])
		}
	}
	// n, three rates (number and unit each), round, five parts, rounds,
	// the baseline's rate (number and unit) and the fraction.
	f := strings.Fields(lines[3])
	if len(f) != 17 || f[0] != "2" {
		t.Fatalf("bench row %q", lines[3])
	}
	round, err := time.ParseDuration(f[7])
	if err != nil || round <= 0 {
		t.Fatalf("round %q: %v", f[7], err)
	}
	if rounds, err := strconv.Atoi(f[13]); err != nil || rounds < 2 {
		t.Fatalf("rounds %q: %v", f[13], err)
	}
	// Riffle moves fewer bytes per second than plain libp2p does.
	if frac, err := strconv.ParseFloat(f[16], 64); err != nil || frac <= 0 || frac >= 1 {
		t.Fatalf("vs baseline %q: %v", f[16], err)
	}
	for _, s := range []string{"chain mix", "verify", "store", "PIR", "network"} {
		if !strings.Contains(lines[4], s+" ") {
			t.Errorf("stages lack %s: %q", s, lines[4])
		}
	}
}
