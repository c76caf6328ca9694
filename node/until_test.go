package node

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// until fails t with msg unless cond holds within timeout. Untagged: tests
// built with and without riffletest use it.
func until(t *testing.T, ctx context.Context, timeout time.Duration, cond func() bool, msg string) {
	t.Helper()
	if err := wait.Until(ctx, timeout, cond); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
}
