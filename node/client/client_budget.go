package client

import (
	"fmt"
	"sort"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// A client and a chain that dropped a server for its refusal budget
// (docs/protocol.md §3 "Who may serve"): a client refuses a chain that
// left out a server of its previous chain for that server's refusal
// budget, unless its user accepts (ClientConfig.AcceptBudgetDrops,
// --accept-budget-drops). An adversary that can make an honest server
// abort twice would otherwise steer clients into a chain without it.
//
// What a client sees of the budget is public and the same for every client
// of epoch N, whatever epochs it attended or what one server withheld: the
// signed aborts inside the certificates of N−1 down to N−BudgetLookback
// that the walk back from N's descriptor passes (every client of N walks
// to that depth or holds no window; proto.WalkBack) (an abort
// certificate: an epoch ended before its final descriptor, charged to its
// signer unless it is the leader's coordination abort; a registration
// never closed, to both its signer and the leader), and the chains of the
// walked epochs. A server of one of those chains that is missing from
// N's, with two such aborts of its own less than m epoch numbers apart,
// the second fewer than m numbers before N, is a budget drop here. Aborts
// after a final descriptor are not in any certificate, so the client
// cannot count them, nor see the servers' grounds for taking a count back
// (a public cause); a server dropped for another reason after two aborts
// is refused all the same, which errs on the safe side.

// budgetAbort is an abort a client saw in a certificate.
type budgetAbort struct {
	number uint64 // the aborted epoch's number
	window uint64 // m of its chain
}

// budgetKeep is how many aborts a client keeps per server (two decide).
const budgetKeep = 4

// budgetState is the signed aborts a client counts for one epoch.
type budgetState struct {
	aborts map[peer.ID][]budgetAbort
}

// note keeps the charged abort of a verified certificate, if any, and
// forgets aborts that no longer count at epoch number now.
func (b *budgetState) note(c *wire.Cert, now uint64) {
	for p, as := range b.aborts {
		if last := as[len(as)-1]; last.number+last.window < now {
			delete(b.aborts, p)
		}
	}
	if c.Kind != wire.CertAbort {
		return
	}
	var a wire.Abort
	if a.Unmarshal(c.Abort) != nil {
		return // verifyCert took it; not reached
	}
	signer := peer.ID(a.Signer)
	if a.Kind == wire.AbortCoord && len(c.Chain) > 0 && signer == peer.ID(c.Chain[int(c.Number%uint64(len(c.Chain)))]) {
		return // the leader's coordination abort is charged to nobody
	}
	b.charge(signer, c)
	if a.Kind == wire.AbortNoClose && len(c.Chain) > 0 {
		// A registration never closed: the servers charge its leader
		// when more than half of the chain's other servers attest it,
		// else the signer. A certificate carries no attestations, so
		// the client counts it against both: every server the servers
		// may charge, never fewer (a corrupt member's abort of an epoch
		// does not clear it at the clients, nor spare the leader).
		b.charge(peer.ID(c.Chain[int(c.Number%uint64(len(c.Chain)))]), c)
	}
}

// charge counts c's abort against p.
func (b *budgetState) charge(p peer.ID, c *wire.Cert) {
	if b.aborts == nil {
		b.aborts = map[peer.ID][]budgetAbort{}
	}
	as := b.aborts[p]
	for _, x := range as {
		if x.number == c.Number {
			return
		}
	}
	as = append(as, budgetAbort{number: c.Number, window: uint64(len(c.Chain))})
	sort.Slice(as, func(i, j int) bool { return as[i].number < as[j].number })
	if len(as) > budgetKeep {
		as = as[len(as)-budgetKeep:]
	}
	b.aborts[p] = as
}

// budgetView is the walk's view of the refusal budgets (proto.BudgetWalk),
// with what the client checks of it.
type budgetView proto.BudgetWalk

// dropped names the servers of last missing from chain for their refusal
// budget at epoch number, as far as this client can tell, each with the
// aborts that put it out.
func (b *budgetState) dropped(last, chain []peer.ID, number uint64) []string {
	in := map[peer.ID]bool{}
	for _, p := range chain {
		in[p] = true
	}
	var why []string
	for _, p := range last {
		if in[p] {
			continue
		}
		as := b.aborts[p]
		for i := 1; i < len(as); i++ {
			prev, x := as[i-1], as[i]
			if x.number-prev.number < x.window && number <= x.number+x.window {
				why = append(why, fmt.Sprintf("%s (aborts it signed in epochs %d and %d)", p.ShortString(), prev.number, x.number))
				break
			}
		}
	}
	return why
}

// dropped names the servers of the walked chains missing from chain, the
// chain of the epoch of number, for their refusal budget.
func (b budgetView) dropped(chain []peer.ID, number uint64) []string {
	var st budgetState
	for i := range b.Certs {
		st.note(&b.Certs[i], number)
	}
	var nums []uint64
	for n := range b.Chains {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] > nums[j] })
	seen := map[peer.ID]bool{}
	var last []peer.ID
	for _, n := range nums {
		for _, p := range b.Chains[n] {
			if !seen[p] {
				seen[p] = true
				last = append(last, p)
			}
		}
	}
	return st.dropped(last, chain, number)
}

// takeChain takes the chain of descriptor d, checked against what the
// window's walk shows (bv): it refuses, unless the user accepts, a chain
// that dropped a server of the walked chains for its refusal budget. The
// chain taken is what the next descriptor's certificate verifies against
// (clientCheckPrevious). Call without c.mu.
func (c *Client) takeChain(d *wire.Descriptor, chain []peer.ID, bv budgetView) error {
	c.mu.Lock()
	why := bv.dropped(chain, d.Number)
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
