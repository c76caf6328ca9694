package client

import (
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/budget"
)

// A chain that dropped a server of the walked chains for its refusal
// budget (docs/protocol.md §3 "Who may serve"): the rule is package
// budget's; the client refuses the chain, or takes it if its user
// accepts (takeChain).

// budgetView is the window walk's view of the refusal budgets.
type budgetView = budget.View

// takeChain takes the chain of descriptor d, checked against what the
// window's walk shows (bv): it refuses, unless the user accepts, a chain
// that dropped a server of the walked chains for its refusal budget. The
// chain taken is what the next descriptor's certificate verifies against
// (clientCheckPrevious). Call without c.mu.
func (c *Client) takeChain(d *wire.Descriptor, chain []peer.ID, bv budgetView) error {
	c.mu.Lock()
	why := bv.Dropped(chain, d.Number)
	accept := c.cfg.AcceptBudgetDrops
	if why == nil || accept {
		c.lastGroup = chain
	}
	c.mu.Unlock()
	if why == nil {
		return nil
	}
	if accept {
		c.log.Warn("epoch taken although its chain dropped a server of the previous chain for its refusal budget (--accept-budget-drops)",
			"number", d.Number, "dropped", strings.Join(why, ", "))
		return nil
	}
	return fmt.Errorf("its chain dropped %s of the previous chain for its refusal budget; "+
		"a chain without it may be one an adversary steered to; waiting for a chain that keeps it "+
		"(to take such chains: --accept-budget-drops, or accept-budget-drops = true in the config file)",
		strings.Join(why, ", "))
}
