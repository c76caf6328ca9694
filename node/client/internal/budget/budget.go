// Package budget is a client's check of a chain that dropped a server
// for its refusal budget (docs/protocol.md §3 "Who may serve"): a client
// refuses a chain that left out a server of its previous chain for that
// server's refusal budget, unless its user accepts (--accept-budget-drops). An adversary that can make an honest server
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
//
// It is a pure function of the walk (View.Dropped): no I/O, no lock.
package budget

import (
	"fmt"
	"sort"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// abort is an abort a client saw in a certificate.
type abort struct {
	number uint64 // the aborted epoch's number
	window uint64 // m of its chain
}

// keep is how many aborts a client keeps per server (two decide).
const keep = 4

// state is the signed aborts a client counts for one epoch.
type state struct {
	aborts map[peer.ID][]abort
}

// note keeps the charged abort of a verified certificate, if any, and
// forgets aborts that no longer count at epoch number now.
func (b *state) note(c *wire.Cert, now uint64) {
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
	if a.Kind == wire.AbortUnfilled && len(c.Chain) > 0 && signer == peer.ID(c.Chain[0]) {
		return // S_0's unfilled round, a dry slot, is charged to no server
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
	if a.Kind == wire.AbortDown && int(a.Round) < len(c.Chain) {
		// "A server was down": the same, against the server it names.
		b.charge(peer.ID(c.Chain[a.Round]), c)
	}
}

// charge counts c's abort against p.
func (b *state) charge(p peer.ID, c *wire.Cert) {
	if b.aborts == nil {
		b.aborts = map[peer.ID][]abort{}
	}
	as := b.aborts[p]
	for _, x := range as {
		if x.number == c.Number {
			return
		}
	}
	as = append(as, abort{number: c.Number, window: uint64(len(c.Chain))})
	sort.Slice(as, func(i, j int) bool { return as[i].number < as[j].number })
	if len(as) > keep {
		as = as[len(as)-keep:]
	}
	b.aborts[p] = as
}

// View is the walk's view of the refusal budgets (proto.BudgetWalk),
// with what the client checks of it.
type View proto.BudgetWalk

// dropped names the servers of last missing from chain for their refusal
// budget at epoch number, as far as this client can tell, each with the
// aborts that put it out.
func (b *state) dropped(last, chain []peer.ID, number uint64) []string {
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

// Dropped names the servers of the walked chains missing from chain, the
// chain of the epoch of number, for their refusal budget.
func (b View) Dropped(chain []peer.ID, number uint64) []string {
	var st state
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
