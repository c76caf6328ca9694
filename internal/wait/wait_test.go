package wait

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	var n atomic.Int32
	if err := Until(context.Background(), time.Second, func() bool { return n.Add(1) >= 3 }); err != nil {
		t.Fatalf("a condition met on the third poll: %v", err)
	}
	if n.Load() != 3 {
		t.Fatalf("cond called %d times, want 3", n.Load())
	}
	start := time.Now()
	err := Until(context.Background(), 100*time.Millisecond, func() bool { return false })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("never-true condition: %v, want a deadline error", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("timeout of 100ms took %v", d)
	}
	n.Store(0)
	start = time.Now()
	if err := UntilEvery(context.Background(), time.Second, 50*time.Millisecond, func() bool { return n.Add(1) >= 3 }); err != nil {
		t.Fatalf("UntilEvery, met on the third poll: %v", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("three polls 50ms apart took %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Until(ctx, time.Minute, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if err := Until(ctx, time.Minute, func() bool { return true }); err != nil {
		t.Fatalf("true condition on a cancelled context: %v", err)
	}
}
