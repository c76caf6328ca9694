package node

import (
	"bytes"
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/window"
)

// The window a Prepare pins (docs/protocol.md §6.3 v3): the leader's
// choice of what to pin and the gap past a timeout, and a member's check
// of both before it signs, which keeps the walk it checked (window.go
// serves it).

// gapFor is the Gap of a Prepare of number whose previous certificate is
// prev, from the certificates kept here (window.GapFor).
func (cs *certState) gapFor(number uint64, prev *wire.Cert) ([]wire.Cert, error) {
	return window.GapFor(number, prev, cs.certOf)
}

// checkGap is a member's check of a Prepare's Gap: its shape, then each
// certificate, the oldest first, as the kept one or verified against the
// group certified for its number (checkCert) and then kept, as
// checkPrevious keeps the previous one. Never call with s.mu held.
func (s *Server) checkGap(number uint64, prev *wire.Cert, gap []wire.Cert) error {
	if err := window.CheckGapShape(number, prev, gap); err != nil {
		return err
	}
	for i := len(gap) - 1; i >= 0; i-- {
		c := &gap[i]
		if mine, ok := s.cert.certOf(c.Number); ok && bytes.Equal(mine.Marshal(), c.Marshal()) {
			continue
		}
		if err := s.abortAfterFinal(c); err != nil {
			return fmt.Errorf("node: the gap's certificate of %d: %w", c.Number, err)
		}
		if err := s.checkCert(c); err != nil {
			return fmt.Errorf("node: the gap's certificate of %d: %w", c.Number, err)
		}
		s.addCert(c)
	}
	return nil
}

// chooseWindow is the leader's window for epoch number: from what this
// server holds, and if that is short of DecoyEpochs epochs or of a record
// N−1's descriptor pinned, from the chain's other servers too.
func (s *Server) chooseWindow(ctx context.Context, chain []peer.ID, number uint64, prev wire.Cert, gap []wire.Cert) []wire.WindowRef {
	if s.hookUnpinnedWindow() {
		return nil
	}
	d := &wire.Descriptor{Number: number, Previous: prev, Gap: gap}
	got := s.win.Held(number)
	short := func(refs []wire.WindowRef) bool {
		if len(refs) < DecoyEpochs {
			return true
		}
		gd := previousGroup(d, got)
		if gd == nil {
			return true
		}
		_, left := window.LeftOutCertified(number, gd.Window, refs)
		return left
	}
	w := walkWindow(d, got)
	// Short of the budgets' depth, no member would sign: it must hold
	// the walk every client of N walks.
	if w.Short || short(window.PinnedRefs(w)) {
		got = append(got, s.askWindow(ctx, chain, number)...)
		w = walkWindow(d, got)
		// The leader holds what it pins, as every member does.
		s.win.Keep(w.Items)
	}
	return window.PinnedRefs(w)
}

// takeWindow holds the window a Prepare pins before this server answers
// it: every pinned record and pool, from this server's store or else the
// leader's, kept here with the walked descriptors. It returns the walk,
// which this server serves as the number's window once it takes the
// Prepare (keepWalk).
func (s *Server) takeWindow(leader peer.ID, p *wire.Prepare) ([]window.Ref, error) {
	// Within the leader's wait for the answer.
	ctx, cancel := context.WithTimeout(s.ctx, shortTimeout/2)
	defer cancel()
	return s.holdWindow(ctx, leader, p, true)
}

// holdWindow checks that this server holds the window p pins, or gets
// what it lacks from src within ctx (none if src is empty), by the rules a
// Prepare's window is checked by (checkWindow).
func (s *Server) holdWindow(ctx context.Context, src peer.ID, p *wire.Prepare, keep bool) ([]window.Ref, error) {
	if s.hookUnpinnedWindow() {
		return nil, nil
	}
	if err := window.CheckWindowRefs(p.Number, p.Window); err != nil {
		return nil, err
	}
	if err := window.CheckGapShape(p.Number, &p.Previous, p.Gap); err != nil {
		return nil, err
	}
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	got := s.win.Held(p.Number)
	if _, ok := resolveWindow(d, got); (!ok || previousGroup(d, got) == nil) && src != "" {
		got = append(got, s.askWindow(ctx, []peer.ID{src}, p.Number)...)
	}
	return s.checkWindow(p, got, src, keep)
}

// checkWindow checks the window p pins against the candidate items got
// (this server's and src's): every pinned epoch is reached by the walk
// back from p's certificates with its pinned record and that record's
// pool, the walk reaches the budgets' depth (BudgetLookback: what every
// client of N counts budgets from), and no record N−1's descriptor
// pinned is left out. With keep it
// stores what it walked (takeWindow), without it nothing (the would-serve
// question, whose Previous is unchecked); it returns the walk.
func (s *Server) checkWindow(p *wire.Prepare, got []wire.WindowItem, src peer.ID, keep bool) ([]window.Ref, error) {
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	w, ok := resolveWindow(d, got)
	if !ok && src == "" {
		return nil, fmt.Errorf("node: %d epochs of the prepared window are not held here (walk short of the budgets' depth: %v)", w.Missing, w.Short)
	}
	if !ok {
		return nil, fmt.Errorf("node: %d epochs of the prepared window are held neither here nor by %s (walk short of the budgets' depth: %v)", w.Missing, src.ShortString(), w.Short)
	}
	if gd := previousGroup(d, got); gd != nil {
		if r, left := window.LeftOutCertified(p.Number, gd.Window, p.Window); left {
			return nil, fmt.Errorf("node: the prepared window leaves out epoch %d, pinned by the one before", r.Number)
		}
	}
	refs := window.Refs(w.Items)
	if keep {
		s.win.Keep(w.Items)
		s.mu.Lock()
		s.checked.number, s.checked.refs = p.Number, refs
		s.mu.Unlock()
	}
	return refs, nil
}

// windowLacks reports whether this server must fetch to check the window
// p pins as holdWindow would: it lacks a pinned epoch, or N−1's
// descriptor, whose pins N's window must keep. A window that breaks the
// rules on its own lacks nothing: holdWindow refuses it.
func (s *Server) windowLacks(p *wire.Prepare) bool {
	if s.hookUnpinnedWindow() || window.CheckWindowRefs(p.Number, p.Window) != nil || window.CheckGapShape(p.Number, &p.Previous, p.Gap) != nil {
		return false
	}
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	got := s.win.Held(p.Number)
	_, ok := resolveWindow(d, got)
	return !ok || previousGroup(d, got) == nil
}
