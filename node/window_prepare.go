package node

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// The window a Prepare pins (docs/protocol.md §6.3 v3): the leader's
// choice of what to pin and the gap past a timeout, and a member's check
// of both before it signs, which keeps the walk it checked (window.go
// serves it).

// pinnedRefs returns the refs of a walk's window.
func pinnedRefs(w windowWalk) []wire.WindowRef {
	out := make([]wire.WindowRef, 0, len(w.Pools))
	for _, pe := range w.Pools {
		out = append(out, wire.WindowRef{Number: pe.Number, Epoch: pe.ID, Closing: closingDigest(w.Recs[pe.ID])})
	}
	return out
}

// leftOutCertified returns a ref of prev (the window N−1's descriptor
// pinned) that window, N's, leaves out although it still could hold it:
// window has fewer than DecoyEpochs epochs or pins an older one, and the
// ref is within N's look-back.
func leftOutCertified(number uint64, prev, window []wire.WindowRef) (wire.WindowRef, bool) {
	for _, r := range prev {
		if r.Number+WindowLookback < number || slices.Contains(window, r) {
			continue
		}
		if len(window) < DecoyEpochs || window[len(window)-1].Number < r.Number {
			return r, true
		}
	}
	return wire.WindowRef{}, false
}

// gapFor is the Gap of a Prepare of number whose previous certificate is
// prev, from the certificates kept here.
func (cs *certState) gapFor(number uint64, prev *wire.Cert) ([]wire.Cert, error) {
	if prev.Kind != wire.CertTimeout {
		return nil, nil
	}
	var out []wire.Cert
	for n := number - 2; n >= 1 && n+WindowLookback >= number; n-- {
		c, ok := cs.certOf(n)
		if !ok {
			return nil, fmt.Errorf("node: no certificate of epoch %d here for the gap of %d", n, number)
		}
		out = append(out, *c)
		if c.Kind != wire.CertTimeout {
			break
		}
	}
	return out, nil
}

// gapBytes encodes a Gap for comparison.
func gapBytes(gap []wire.Cert) []byte {
	var b []byte
	for i := range gap {
		b = append(b, gap[i].Marshal()...)
	}
	return b
}

// checkGapShape checks a Gap on its own: empty unless prev (the
// certificate of number−1) is a timeout; else the certificates of
// number−2 down, a number at a time, each a timeout but the last, which
// names an epoch or is of the look-back's last number (or 1).
func checkGapShape(number uint64, prev *wire.Cert, gap []wire.Cert) error {
	if prev.Kind != wire.CertTimeout {
		if len(gap) > 0 {
			return fmt.Errorf("node: a gap of %d certificates after a certificate of kind %d", len(gap), prev.Kind)
		}
		return nil
	}
	for i := range gap {
		c := &gap[i]
		if c.Kind == wire.CertNone || c.Number == 0 || c.Number+uint64(i)+2 != number || c.Number+WindowLookback < number {
			return fmt.Errorf("node: the gap of %d holds the certificate of %d at %d", number, c.Number, i)
		}
		if c.Kind != wire.CertTimeout && i != len(gap)-1 {
			return fmt.Errorf("node: the gap of %d goes on past epoch %d", number, c.Number)
		}
	}
	end := number - 1 // the number of the last certificate
	if len(gap) > 0 {
		if gap[len(gap)-1].Kind != wire.CertTimeout {
			return nil
		}
		end = gap[len(gap)-1].Number
	}
	if end > 1 && end-1+WindowLookback >= number {
		return fmt.Errorf("node: the gap of %d stops at %d, short of an epoch or the look-back", number, end)
	}
	return nil
}

// checkGap is a member's check of a Prepare's Gap: its shape, then each
// certificate, the oldest first, as the kept one or verified against the
// group certified for its number (checkCert) and then kept, as
// checkPrevious keeps the previous one. Never call with s.mu held.
func (s *Server) checkGap(number uint64, prev *wire.Cert, gap []wire.Cert) error {
	if err := checkGapShape(number, prev, gap); err != nil {
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

// checkWindowRefs checks a Prepare's window on its own: at most
// DecoyEpochs epochs, newest first, each of number at most N−2 and within
// the look-back.
func checkWindowRefs(number uint64, refs []wire.WindowRef) error {
	if len(refs) > DecoyEpochs {
		return fmt.Errorf("node: window of %d epochs", len(refs))
	}
	for i, r := range refs {
		if r.Number+2 > number || r.Number+WindowLookback < number || i > 0 && refs[i-1].Number <= r.Number {
			return fmt.Errorf("node: window pins epoch number %d for %d", r.Number, number)
		}
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
	got := s.heldItems(number)
	short := func(refs []wire.WindowRef) bool {
		if len(refs) < DecoyEpochs {
			return true
		}
		gd := previousGroup(d, got)
		if gd == nil {
			return true
		}
		_, left := leftOutCertified(number, gd.Window, refs)
		return left
	}
	w := walkWindow(d, got)
	// Short of the budgets' depth, no member would sign: it must hold
	// the walk every client of N walks.
	if w.Short || short(pinnedRefs(w)) {
		got = append(got, s.askWindow(ctx, chain, number)...)
		w = walkWindow(d, got)
		// The leader holds what it pins, as every member does.
		s.keepWindow(w.Items)
	}
	return pinnedRefs(w)
}

// takeWindow holds the window a Prepare pins before this server answers
// it: every pinned record and pool, from this server's store or else the
// leader's, kept here with the walked descriptors. It returns the walk,
// which this server serves as the number's window once it takes the
// Prepare (keepWalk).
func (s *Server) takeWindow(leader peer.ID, p *wire.Prepare) ([]walkRef, error) {
	// Within the leader's wait for the answer.
	ctx, cancel := context.WithTimeout(s.ctx, shortTimeout/2)
	defer cancel()
	return s.holdWindow(ctx, leader, p, true)
}

// holdWindow checks that this server holds the window p pins, or gets
// what it lacks from src within ctx (none if src is empty), by the rules a
// Prepare's window is checked by (checkWindow).
func (s *Server) holdWindow(ctx context.Context, src peer.ID, p *wire.Prepare, keep bool) ([]walkRef, error) {
	if s.hookUnpinnedWindow() {
		return nil, nil
	}
	if err := checkWindowRefs(p.Number, p.Window); err != nil {
		return nil, err
	}
	if err := checkGapShape(p.Number, &p.Previous, p.Gap); err != nil {
		return nil, err
	}
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	got := s.heldItems(p.Number)
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
func (s *Server) checkWindow(p *wire.Prepare, got []wire.WindowItem, src peer.ID, keep bool) ([]walkRef, error) {
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	w, ok := resolveWindow(d, got)
	if !ok && src == "" {
		return nil, fmt.Errorf("node: %d epochs of the prepared window are not held here (walk short of the budgets' depth: %v)", w.Missing, w.Short)
	}
	if !ok {
		return nil, fmt.Errorf("node: %d epochs of the prepared window are held neither here nor by %s (walk short of the budgets' depth: %v)", w.Missing, src.ShortString(), w.Short)
	}
	if gd := previousGroup(d, got); gd != nil {
		if r, left := leftOutCertified(p.Number, gd.Window, p.Window); left {
			return nil, fmt.Errorf("node: the prepared window leaves out epoch %d, pinned by the one before", r.Number)
		}
	}
	refs := walkRefs(w.Items)
	if keep {
		s.keepWindow(w.Items)
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
	if s.hookUnpinnedWindow() || checkWindowRefs(p.Number, p.Window) != nil || checkGapShape(p.Number, &p.Previous, p.Gap) != nil {
		return false
	}
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	got := s.heldItems(p.Number)
	_, ok := resolveWindow(d, got)
	return !ok || previousGroup(d, got) == nil
}
