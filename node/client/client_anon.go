package client

import (
	"fmt"
	"strings"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// trustedSet counts the clients of a final descriptor registered through
// servers this client trusts (its primary at chain position pidx and its
// required servers), and says how many came through each (§3 v3):
// registrations through a malicious primary cost the adversary nothing, so
// only these count.
func (c *Client) trustedSet(v *proto.View, d *wire.Descriptor, pidx int) (int, string) {
	trusted := map[int]bool{pidx: true}
	for _, r := range c.cfg.Require {
		for i, p := range v.Chain {
			if p == r {
				trusted[i] = true
			}
		}
	}
	per := make([]int, len(v.Chain))
	total := 0
	for _, ce := range d.Clients {
		if int(ce.Primary) < len(per) {
			per[ce.Primary]++
		}
		if trusted[int(ce.Primary)] {
			total++
		}
	}
	var b strings.Builder
	for i, k := range per {
		mark := ""
		if trusted[i] {
			mark = "*"
		}
		fmt.Fprintf(&b, " %s%s:%d", mark, string(d.Group[i].Nick), k)
	}
	return total, b.String()
}

// checkAnonymity counts the epoch's trusted anonymity set and tells the
// user in one line: the chain's size and the set, or, when the trusted set
// is below the client's minimum, that jobs wait: the client takes part
// with cover only (holdJobs), so that nothing of its jobs goes out in an
// epoch that small, and the epoch still runs for the others. The chain and
// the count through each primary go to the debug log. Call without c.mu.
func (c *Client) checkAnonymity(v *proto.View, d *wire.Descriptor, pidx int) {
	n, per := c.trustedSet(v, d, pidx)
	c.mu.Lock()
	c.trusted = n
	c.mu.Unlock()
	var chain strings.Builder
	for i, g := range d.Group {
		fmt.Fprintf(&chain, " %s(%s)", string(g.Nick), v.Chain[i].ShortString())
	}
	c.log.Debug("epoch joined", "epoch", fmt.Sprintf("%x", v.ID[:6]), "chain", strings.TrimSpace(chain.String()), "per_primary", strings.TrimSpace(per))
	min := c.cfg.MinAnonymity
	if n >= min {
		c.progress("epoch %x: %d servers, anonymity set %d clients, %d through trusted servers", v.ID[:4], len(v.Chain), len(d.Clients), n)
		return
	}
	c.progress("epoch %x: jobs wait: only %d clients registered through servers this client trusts, below the minimum anonymity set %d (--min-anonymity); sending cover only until a larger epoch",
		v.ID[:4], n, min)
}
