package client

import (
	"fmt"
	"strings"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/anonset"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// checkAnonymity counts the epoch's trusted anonymity set (§3 v3,
// internal/anonset) and tells the
// user in one line: the chain's size and the set, or, when the trusted set
// is below the client's minimum, that jobs wait: the client takes part
// with cover only (waitline.Notes.Hold), so that nothing of its jobs goes out in an
// epoch that small, and the epoch still runs for the others. The chain and
// the count through each primary go to the debug log. Call without c.mu.
func (c *Client) checkAnonymity(v *proto.View, d *wire.Descriptor, pidx int) {
	n, per := anonset.Trusted(v.Chain, c.cfg.Require, d, pidx)
	c.notes.SetTrusted(n)
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
