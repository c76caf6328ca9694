package localnet

import (
	"context"
	"testing"
	"time"
)

// TestBaseline runs the plain-libp2p yardstick on a few clients and checks
// that it moved every byte: the goodput is exactly b·rounds over the time.
func TestBaseline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n, b, rounds = 4, 16 << 10, 3
	r, err := Baseline(ctx, n, b, rounds)
	if err != nil {
		t.Fatal(err)
	}
	if r.Clients != n || r.Rounds != rounds || r.Time <= 0 || r.Goodput <= 0 {
		t.Fatalf("baseline %+v", r)
	}
	if want := float64(b*rounds) / r.Time.Seconds(); r.Goodput != want {
		t.Fatalf("goodput %v, want %v", r.Goodput, want)
	}
	if _, err := Baseline(ctx, 0, b, rounds); err == nil {
		t.Fatal("baseline with no clients: no error")
	}
}
