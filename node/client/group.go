package client

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// A client's budget (ClientConfig.MaxRate, `riffle client --max-rate`):
// the client holds the group's worst case (GroupCost, from the constants
// alone: n_max, L_max, m_max, b, k, R, the pace and the registration
// window) against its budget once per group, that is once per set of
// constants, and refuses a group over it plainly. Never per epoch and
// never by sending less: a per-epoch check on the epoch's n would let
// Sybils that inflate n push low-budget clients out of chosen epochs,
// and what a client sends would tell its budget (docs/anonymity.md).

// ErrOverBudget is a group whose constants allow more than MaxRate.
var ErrOverBudget = errors.New("node: group over the client's budget")

// groupState is the group a client checked and what it moved. Guarded by
// Client.mu, but for the counters.
type groupState struct {
	checked bool
	key     wire.Params // the constants checked: the round limit zeroed
	cost    proto.ClientCost
	// sent and recv count the bytes of every request and reply since
	// since (callTo).
	sent, recv atomic.Int64
	since      time.Time
}

// groupKey is what makes a group for the budget: every parameter but the
// round limit, which bounds a round's duration, not its bytes.
func groupKey(p wire.Params) wire.Params {
	p.RoundLimitMs = 0
	return p
}

// checkGroup computes the cost of the group of p the first time its
// constants are seen and refuses it if over the client's budget.
func (c *Client) checkGroup(p wire.Params) error {
	key := groupKey(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.group.checked && c.group.key == key {
		return nil
	}
	cost := proto.GroupCost(proto.Params(p))
	c.group.checked, c.group.key, c.group.cost = true, key, cost
	if max := c.cfg.MaxRate; max > 0 && cost.Worst.Max() > max {
		return fmt.Errorf("%w: this group's constants (b = %d, k = %d, n_max = %d, L_max = %d, R = %d, round interval %d ms) allow up to %s sent and %s received (%s/s at most), above --max-rate %s/s; raise --max-rate or use another group",
			ErrOverBudget, p.ChunkSize, p.K, p.MaxClients, p.MaxRows, p.Rounds, p.RoundIntervalMs,
			proto.FormatRate(cost.Worst.SendPerHour), proto.FormatRate(cost.Worst.RecvPerHour), proto.FormatBytes(cost.Worst.Max()), proto.FormatBytes(max))
	}
	return nil
}

// attemptGap is the least time between the starts of two epoch attempts:
// the registration window of the group last checked.
func (c *Client) attemptGap() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.group.key.RegWindowMs) * time.Millisecond
}

// Err is why the client stopped by itself (ErrOverBudget), nil while it
// runs or if it was closed.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fatal
}

// Done is closed once the client stopped, by Close or by itself (Err).
func (c *Client) Done() <-chan struct{} { return c.done }
