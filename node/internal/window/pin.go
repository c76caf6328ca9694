package window

import (
	"context"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The certified window (§6.3 v3): the leader's choice of what N's
// Prepare pins, and a member's check that it holds every pinned record
// and pool before it answers, keeping the walk it checked (Served).

// Choose is the leader's window for epoch number: from what this
// server holds, and if that is short of DecoyEpochs epochs or of a record
// N−1's descriptor pinned, from the chain's other servers too.
func (ws *Items) Choose(ctx context.Context, chain []peer.ID, number uint64, prev wire.Cert, gap []wire.Cert) []wire.WindowRef {
	if ws.Src.Unpinned() {
		return nil
	}
	d := &wire.Descriptor{Number: number, Previous: prev, Gap: gap}
	got := ws.Held(number)
	short := func(refs []wire.WindowRef) bool {
		if len(refs) < proto.DecoyEpochs {
			return true
		}
		gd := proto.PreviousGroup(d, got)
		if gd == nil {
			return true
		}
		_, left := LeftOutCertified(number, gd.Window, refs)
		return left
	}
	w := proto.WalkWindow(d, got)
	// Short of the budgets' depth, no member would sign: it must hold
	// the walk every client of N walks.
	if w.Short || short(PinnedRefs(w)) {
		got = append(got, ws.Src.Ask(ctx, chain, number)...)
		w = proto.WalkWindow(d, got)
		// The leader holds what it pins, as every member does.
		ws.Keep(w.Items)
	}
	return PinnedRefs(w)
}

// Hold checks that this server holds the window p pins, or gets
// what it lacks from src within ctx (none if src is empty), by the rules a
// Prepare's window is checked by (Check).
func (ws *Items) Hold(ctx context.Context, src peer.ID, p *wire.Prepare, keep bool) ([]Ref, error) {
	if ws.Src.Unpinned() {
		return nil, nil
	}
	if err := CheckWindowRefs(p.Number, p.Window); err != nil {
		return nil, err
	}
	if err := CheckGapShape(p.Number, &p.Previous, p.Gap); err != nil {
		return nil, err
	}
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	got := ws.Held(p.Number)
	if _, ok := proto.ResolveWindow(d, got); (!ok || proto.PreviousGroup(d, got) == nil) && src != "" {
		got = append(got, ws.Src.Ask(ctx, []peer.ID{src}, p.Number)...)
	}
	return ws.Check(p, got, src, keep)
}

// Check checks the window p pins against the candidate items got
// (this server's and src's): every pinned epoch is reached by the walk
// back from p's certificates with its pinned record and that record's
// pool, the walk reaches the budgets' depth (BudgetLookback: what every
// client of N counts budgets from), and no record N−1's descriptor
// pinned is left out. With keep it
// stores what it walked (node's takeWindow), without it nothing (the
// would-serve question, whose Previous is unchecked); it returns the walk.
func (ws *Items) Check(p *wire.Prepare, got []wire.WindowItem, src peer.ID, keep bool) ([]Ref, error) {
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	w, ok := proto.ResolveWindow(d, got)
	if !ok && src == "" {
		return nil, fmt.Errorf("node: %d epochs of the prepared window are not held here (walk short of the budgets' depth: %v)", w.Missing, w.Short)
	}
	if !ok {
		return nil, fmt.Errorf("node: %d epochs of the prepared window are held neither here nor by %s (walk short of the budgets' depth: %v)", w.Missing, src.ShortString(), w.Short)
	}
	if gd := proto.PreviousGroup(d, got); gd != nil {
		if r, left := LeftOutCertified(p.Number, gd.Window, p.Window); left {
			return nil, fmt.Errorf("node: the prepared window leaves out epoch %d, pinned by the one before", r.Number)
		}
	}
	refs := Refs(w.Items)
	if keep {
		ws.Keep(w.Items)
		ws.mu.Lock()
		ws.checked.number, ws.checked.refs = p.Number, refs
		ws.mu.Unlock()
	}
	return refs, nil
}

// Lacks reports whether this server must fetch to check the window
// p pins as Hold would: it lacks a pinned epoch, or N−1's
// descriptor, whose pins N's window must keep. A window that breaks the
// rules on its own lacks nothing: Hold refuses it.
func (ws *Items) Lacks(p *wire.Prepare) bool {
	if ws.Src.Unpinned() || CheckWindowRefs(p.Number, p.Window) != nil || CheckGapShape(p.Number, &p.Previous, p.Gap) != nil {
		return false
	}
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	got := ws.Held(p.Number)
	_, ok := proto.ResolveWindow(d, got)
	return !ok || proto.PreviousGroup(d, got) == nil
}

// ServedToServers is what this server serves a server of the group of
// the window before number: what it serves clients and, for a Prepare
// checked here but not yet taken, its walk (the servers asked whether
// they would serve take its window from here): at most a walk more, an
// item a number each.
func (ws *Items) ServedToServers(number uint64) []wire.WindowItem {
	out := ws.Served(number)
	ws.mu.Lock()
	var refs []Ref
	if ws.checked.number == number {
		refs = ws.checked.refs
	}
	ws.mu.Unlock()
	for _, r := range refs {
		if !slices.ContainsFunc(out, func(it wire.WindowItem) bool { return it.Epoch == r.Epoch && SameRecord(it.Closing, r.Digest) }) {
			out = append(out, ws.ServedItem(r, number))
		}
	}
	return out
}
