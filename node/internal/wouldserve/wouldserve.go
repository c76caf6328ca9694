// Package wouldserve is a left-out server's question (docs/protocol.md §3
// v3, "Epoch numbers and leaders"; docs/proto-node.md "Chains derived from
// certificates"): a Prepare may leave out a server of the last
// certificate only with a cause each server checks alone, one of them the
// server's own withdrawal, which each server asks of it (TypeWouldServe)
// rather than take the leader's word; and the answer a server gives, as
// it would check the Prepare, the window's fetch from the asker bounded
// by the asker's budget and the slots (package slots).
//
// Service is the type. It has no state or lock of its own: the window's
// items (package window), the slots and the chains (package members)
// keep theirs; it holds no lock across a call.
package wouldserve

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/eligible"
	"github.com/riffle-net/riffle/node/internal/members"
	"github.com/riffle-net/riffle/node/internal/peers"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roster"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

var ack = []byte{}

// Service asks and answers the would-serve question.
type Service struct {
	H       transport.Host
	Chains  *members.Chains
	Peers   *peers.Who
	Roster  *roster.Table
	Win     *window.Items
	Slots   *slots.Window
	Log     *slog.Logger
	Ctx     context.Context // the server's: its end ends every question
	Timing  *proto.Tunables
	PIRRate float64     // bytes/s of XOR the parameters' work check assumes
	Params  wire.Params // the group's constant parameters
	// Lost says why this server, which lost its records, signs nothing
	// and so serves nowhere for now, or nil.
	Lost func() error
}

// CheckLeftOut refuses a Prepare whose chain leaves out a server of its
// previous certificate without a cause that holds here. A full chain
// (wire.MaxServers) leaves servers out by its size. Never call with a
// lock held that Chains's host takes.
func (sv *Service) CheckLeftOut(p *wire.Prepare) error {
	if p.Previous.Kind == wire.CertNone || len(p.Chain) >= wire.MaxServers {
		return nil
	}
	in := map[string]bool{}
	for _, b := range p.Chain {
		in[string(b)] = true
	}
	live := map[peer.ID]bool{}
	for _, q := range sv.Chains.At(p.Number) {
		live[q] = true
	}
	for _, b := range p.Previous.Chain {
		d := peer.ID(b)
		if in[string(b)] || d == sv.H.ID() || !live[d] || sv.Chains.H.OutAt(d, p.Number) {
			continue
		}
		ids := make([]peer.ID, 0, len(p.Chain)+1)
		for _, c := range p.Chain {
			ids = append(ids, peer.ID(c))
		}
		ids = append(ids, d)
		roster.SortChain(ids)
		q := wire.Prepare{Number: p.Number, Nonce: p.Nonce, Params: p.Params, Chain: proto.ChainIDs(ids), Previous: p.Previous, Window: p.Window, Gap: p.Gap, Cands: p.Cands}
		ctx, cancel := context.WithTimeout(sv.Ctx, sv.Timing.WouldServeTimeout)
		_, err := transport.Call(ctx, sv.H, d, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeWouldServe, Body: q.Marshal(), Timeout: sv.Timing.WouldServeTimeout})
		cancel()
		switch {
		case err == nil:
			return fmt.Errorf("node: prepared chain leaves out %s of epoch %d's certificate, which would serve", d.ShortString(), p.Previous.Number)
		case strings.Contains(err.Error(), eligible.WithdrawMark):
			sv.Log.Debug("left-out server withdraws", "peer", d.ShortString(), "number", p.Number)
		default:
			// Not reachable from here: as good as not live.
			sv.Log.Debug("left-out server did not answer", "peer", d.ShortString(), "err", err)
		}
	}
	return nil
}

// OnWouldServe answers a roster server that asks whether this server would
// serve in a chain (a Prepare left it out): an ack, or the withdrawal it
// would send the leader (package eligible).
func (sv *Service) OnWouldServe(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	if err := sv.Lost(); err != nil {
		return 0, nil, err
	}
	if sv.Roster.Get(from) == nil {
		return 0, nil, errors.New("node: would-serve question only from roster servers")
	}
	var p wire.Prepare
	if err := p.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	// The parameters too, as its Prepare would be checked: a server that
	// would refuse them refuses to serve, and may be left out.
	if err := proto.CheckParams(p.Params, sv.PIRRate); err != nil {
		return 0, nil, err
	}
	if err := proto.CheckGroupParams(p.Params, sv.Params); err != nil {
		return 0, nil, err
	}
	// The chain's servers as its Prepare would check them (node's onPrepare):
	// a server that would refuse the Prepare for a server of the chain
	// named by a round blame or out for its refusal budget here says so,
	// and is left out. It answered yes, and refused every Prepare that
	// left it out: one server that counted another out for its budget,
	// where the leader did not, held the group without an epoch for good
	// (the swarm's seed 5; TestWouldServeAsPrepare).
	out := func(q peer.ID) bool { return sv.Chains.H.OutAt(q, p.Number) }
	eligible := func(q peer.ID) error { return sv.Chains.EligibleIn(q, p.Number, p.Previous.Chain) }
	pos, err := roster.Members(p.Chain, sv.H.ID(), "would-serve chain", sv.Chains.Min, sv.Chains.H.Excluded, out, eligible)
	if err != nil {
		return 0, nil, err
	}
	if pos < 0 {
		return 0, nil, errors.New("node: would-serve chain without this server")
	}
	// The window, as its Prepare would be checked (node's takeWindow): a server
	// that neither holds it nor gets it from the asker, which took it
	// before it asked, would refuse the Prepare, so it says so and is left
	// out. It answered yes, so the others refused the attempt that left it
	// out for want of the window (TestWouldServeWindow). The answer
	// depends only on the question and what is held here, never on who
	// asked before: what is held answers first; a yes this server gave
	// after a fetch for the same question (number, Previous, Window, Gap)
	// answers next (saidYes), since nothing fetched is kept, the Previous
	// it walks from being unchecked here. A member asked it again for a
	// second attempt at N and it answered "not held", as good as not live,
	// and was left out (TestWouldServeAskedAgain).
	wctx, cancel := context.WithTimeout(ctx, sv.Timing.WouldServeTimeout/2)
	defer cancel()
	if !sv.Win.Lacks(&p) {
		if _, err := sv.Win.Hold(wctx, "", &p, false); err != nil {
			return 0, nil, err
		}
		return wire.TypeAck, ack, nil
	}
	key := questionKey(&p)
	if sv.Slots.SaidYes(key, p.Number) {
		return wire.TypeAck, ack, nil
	}
	// Else a fetch from the asker, one question at a time: only from a
	// server of the group (a roster server may be anyone that said hello)
	// in the question's chain, as a member of the Prepare it checks is,
	// for the next number here, within the asker's budget for the number
	// (askedFetch), the reply capped at maxLookbackWindow: a group peer
	// cannot make this server download window after window of made-up
	// refs. A fetch that failed (the asker slow or its slots full) leaves
	// the next question a fetch, up to slots.WouldServeFetches; one that could
	// not run is given back. A question beyond that is answered from what
	// is held here. "Busy" is no answer, since it says nothing of the
	// question and the asker took it as not live: a question whose fetch
	// finds every slot taken waits for one (the slots cover every fetch
	// the budgets give for a number; TestWouldServeBusyWaits).
	src := peer.ID("")
	if sv.Chains.GroupPeer(from) && slices.ContainsFunc(p.Chain, func(b []byte) bool { return peer.ID(b) == from }) && p.Number == sv.Chains.Certs.Top()+1 {
		if done, ok := sv.askedFetch(from, p.Number); ok {
			release, err := sv.Slots.Asking.TakeWait(wctx, from, "", slots.MaxAskers, slots.MaxAskers)
			if err != nil {
				done(false)
			} else {
				defer release()
				defer done(true)
				src = from
			}
		}
	}
	if _, err := sv.Win.Hold(wctx, src, &p, false); err != nil {
		return 0, nil, err
	}
	if src != "" {
		sv.Slots.RememberYes(key, p.Number)
	}
	return wire.TypeAck, ack, nil
}

// questionKey is what a would-serve answer about the window depends on:
// the question without its chain and nonce.
func questionKey(p *wire.Prepare) [32]byte {
	q := *p
	q.Chain, q.Nonce = nil, [32]byte{}
	return sha256.Sum256(q.Marshal())
}

// askedFetch reports whether this server may fetch the window of a
// would-serve question of number n (the next here) from the asker from,
// and counts it (slots.Window.Asked, whose budgets it is): the servers
// of n−1's certificate (the group certified for n) are members, any
// other server of the group is counted in its address range. A Prepare
// of n holds more than half of n−1's certificate (certs.HoldsPrevGroup), so an
// honest one of its members asks, fetches, and its yes then answers the
// same question from the others (SaidYes).
func (sv *Service) askedFetch(from peer.ID, n uint64) (done func(ran bool), ok bool) {
	member := false
	if g, ok := sv.Chains.Certs.Group(n); ok && g[from] && !sv.Chains.H.Excluded(from) {
		member = true
	}
	rng := ""
	if !member {
		rng = sv.Peers.Range(from)
	}
	return sv.Slots.Asked(from, n, member, rng)
}
