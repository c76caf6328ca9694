// Package meter is a client's budget (ClientConfig.MaxRate, `riffle
// client --max-rate`; docs/protocol.md §9 costs, §3 constants): the
// client holds the group's worst case (GroupCost, from the constants
// alone: n_max, L_max, m_max, b, k, R, the pace and the registration
// window) against its budget once per group, that is once per set of
// constants, and refuses a group over it plainly. Never per epoch and
// never by sending less: a per-epoch check on the epoch's n would let
// Sybils that inflate n push low-budget clients out of chosen epochs,
// and what a client sends would tell its budget (docs/anonymity.md).
// Group also counts what the client moved. It has its own lock, a leaf,
// and does no I/O.
package meter

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// ErrOverBudget is a group whose constants allow more than MaxRate.
var ErrOverBudget = errors.New("node: group over the client's budget")

// Group is the group a client checked and what it moved.
type Group struct {
	// Since is when the counts began (the client's start).
	Since time.Time

	mu      sync.Mutex
	checked bool
	key     wire.Params // the constants checked: the round limit zeroed
	cost    proto.ClientCost
	// sent and recv count the bytes of every request and reply since
	// Since.
	sent, recv atomic.Int64
}

// groupKey is what makes a group for the budget: every parameter but the
// round limit, which bounds a round's duration, not its bytes.
func groupKey(p wire.Params) wire.Params {
	p.RoundLimitMs = 0
	return p
}

// Check computes the cost of the group of p the first time its constants
// are seen and refuses it if over max bytes a second (0: no budget).
func (g *Group) Check(p wire.Params, max float64) error {
	key := groupKey(p)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.checked && g.key == key {
		return nil
	}
	cost := proto.GroupCost(proto.Params(p))
	g.checked, g.key, g.cost = true, key, cost
	if max > 0 && cost.Worst.Max() > max {
		return fmt.Errorf("%w: this group's constants (b = %d, k = %d, n_max = %d, L_max = %d, R = %d, round interval %d ms) allow up to %s sent and %s received (%s/s at most), above --max-rate %s/s; raise --max-rate or use another group",
			ErrOverBudget, p.ChunkSize, p.K, p.MaxClients, p.MaxRows, p.Rounds, p.RoundIntervalMs,
			proto.FormatRate(cost.Worst.SendPerHour), proto.FormatRate(cost.Worst.RecvPerHour), proto.FormatBytes(cost.Worst.Max()), proto.FormatBytes(max))
	}
	return nil
}

// Gap is the least time between the starts of two epoch attempts: the
// registration window of the group last checked.
func (g *Group) Gap() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Duration(g.key.RegWindowMs) * time.Millisecond
}

// Sent and Received count n bytes each way.
func (g *Group) Sent(n int)     { g.sent.Add(int64(n)) }
func (g *Group) Received(n int) { g.recv.Add(int64(n)) }

// Worst is the group's worst case an hour each way, ok once a group was
// checked.
func (g *Group) Worst() (send, recv float64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cost.Worst.SendPerHour, g.cost.Worst.RecvPerHour, g.checked
}

// Moved is what the client sent and received an hour since Since, at now.
func (g *Group) Moved(now time.Time) (sent, recv float64) {
	h := now.Sub(g.Since).Hours()
	if h <= 0 {
		return 0, 0
	}
	return float64(g.sent.Load()) / h, float64(g.recv.Load()) / h
}
