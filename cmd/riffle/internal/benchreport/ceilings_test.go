package benchreport

import (
	"math"
	"testing"
	"time"
)

// TestStages checks each stage's bytes, rate and ratio by hand: m = 3,
// n = 4, b = 1 KiB, k = 2, every stage 1 ms, every ceiling 1 MiB/s but
// XOR at 2 MiB/s.
func TestStages(t *testing.T) {
	r := Round{Servers: 3, Clients: 4, ChunkSize: 1024, K: 2, ChainMix: time.Millisecond, Verify: time.Millisecond,
		Store: time.Millisecond, PIR: time.Millisecond, Other: time.Millisecond}
	c := Ceilings{AESGCM: 1 << 20, SHA256: 1 << 20, XOR: 2 << 20, Memcpy: 1 << 20, Loopback: 1 << 20}
	want := map[string]float64{
		"chain mix": 3 * 4 * 1024, // m·n·b
		"verify":    4 * 1024,     // n·b
		"store":     4 * 1024,
		"PIR":       4 * 2 * 4 / 2 * 1024, // n·k · n/2 · b
		"network":   4 * 1024 * 3,         // n·b·(1+k)
	}
	st := Stages(r, c)
	if len(st) != len(want) {
		t.Fatalf("%d stages", len(st))
	}
	for _, s := range st {
		if s.Bytes != want[s.Name] {
			t.Errorf("%s: %v bytes, want %v", s.Name, s.Bytes, want[s.Name])
		}
		rate := want[s.Name] / 1e-3
		ceil := float64(1 << 20)
		if s.Name == "PIR" {
			ceil = 2 << 20
		}
		if math.Abs(s.Rate-rate) > 1e-6*rate || math.Abs(s.Ratio-rate/ceil) > 1e-9 {
			t.Errorf("%s: rate %v ratio %v, want %v and %v", s.Name, s.Rate, s.Ratio, rate, rate/ceil)
		}
	}
	// A stage that took no time has no rate rather than an infinite one.
	r.Store = 0
	if s := Stages(r, c)[2]; s.Rate != 0 || s.Ratio != 0 {
		t.Errorf("store with no time: %+v", s)
	}
}
