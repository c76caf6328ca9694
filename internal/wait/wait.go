// Package wait holds the one poll-with-deadline helper of riffle's tests,
// the benchmark and the demo network: node's own tests (package node) use
// it as well as those that start networks with node/nodetest, so it
// imports nothing of riffle.
package wait

import (
	"context"
	"fmt"
	"time"
)

// Every is how often Until checks its condition: short beside the
// network's events (rounds take tens of milliseconds and more) and long
// enough that a poll costs nothing.
const Every = 20 * time.Millisecond

// Until calls cond every Every until it returns true, and returns nil then;
// it returns an error once timeout has passed or ctx is done first. cond
// is called at once, so a condition already true costs no wait.
func Until(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return UntilEvery(ctx, timeout, Every, cond)
}

// UntilEvery is Until calling cond every period: for a condition that
// costs (scoring the epochs of an adversary run) or one polled over many
// virtual minutes.
func UntilEvery(ctx context.Context, timeout, period time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			if cond() {
				return nil
			}
			return fmt.Errorf("wait: condition not met within %v: %w", timeout, ctx.Err())
		case <-t.C:
		}
	}
}
