package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// A client's side of the group's decoy window (docs/protocol.md §6.3 v3).
// Before it registers in epoch N, a client holds N's window: the epochs
// N's descriptor pins (window.go: the leader's last DecoyEpochs epochs of
// number at most N−2 with a closing record, each with its record's
// digest), reached by walking back from N's descriptor (each epoch's
// descriptor is pinned by the certificate the next one carries, so every
// client of N walks the same epochs), each with its pool checked against
// its record. Every member of N's chain held them all before it answered
// N's Prepare.
// It asks every server of N's chain and of N−1's at once (those that
// served the window's epochs hold their records; N's may be new) and
// takes each part from whichever server gives one that checks: the
// outcome is the honest server's answer whatever the others send. N−1 is
// left out of the window: its record may still be in the making while N
// registers, and whether a client held it would then follow when it
// asked. Every client asks the same (N's id and number) and uses only the
// replies of this epoch: what it held before, which would follow the
// epochs it attended, neither shows in its request nor changes its
// window.

// errNoWindow: no server of the chains gave the whole window.
var errNoWindow = errors.New("node: no server of the chain gave the decoy window")

// windowReply is one server's answer to a window request.
type windowReply struct {
	p     peer.ID
	items []wire.WindowItem
	err   error
}

// fetchWindow makes the window of the open epoch v the client's decoy
// pool, and its records those that settle waiting chunks. It asks every
// server of v's chain at once, and every server of N−1's chain as soon as
// a reply gives N−1's descriptor (pinned by v's previous certificate). It
// returns errNoWindow if no server gave every pinned record and pool.
func (c *Client) fetchWindow(ctx context.Context, v *view) error {
	req := (&wire.WindowReq{Epoch: v.ID, Number: v.Desc.Number}).Marshal()
	res := make(chan windowReply)
	asked := map[peer.ID]bool{}
	pending := 0
	ask := func(p peer.ID, addrs [][]byte) {
		if p == c.h.ID() || asked[p] {
			return
		}
		asked[p] = true
		c.addAddrs(p, addrs)
		pending++
		go func() {
			rep, err := c.callPeer(ctx, p, request{Proto: ProtoClient, Type: wire.TypeWindowReq, Body: req, Timeout: shortTimeout})
			for try := 0; try < windowRetries && errors.Is(err, errWindowBusy); try++ {
				// A busy server (every client of the epoch asks at
				// once) is asked again after a random delay.
				select {
				case <-time.After(windowRetryDelay(v)):
				case <-ctx.Done():
				}
				rep, err = c.callPeer(ctx, p, request{Proto: ProtoClient, Type: wire.TypeWindowReq, Body: req, Timeout: shortTimeout})
			}
			var w wire.Window
			if err == nil {
				err = w.Unmarshal(rep)
			}
			res <- windowReply{p, w.Items, err}
		}()
	}
	for i, p := range v.Chain {
		ask(p, v.Desc.Group[i].Addrs)
	}
	var got []wire.WindowItem
	answers, prevAsked := 0, false
	for ; pending > 0; pending-- {
		r := <-res
		if r.err != nil {
			c.log.Info("decoy window from a chain server failed", "peer", r.p.ShortString(), "err", r.err)
			continue
		}
		answers++
		got = append(got, r.items...)
		if prevAsked {
			continue
		}
		if gd := previousGroup(v.Desc, r.items); gd != nil {
			prevAsked = true
			for _, g := range gd.Group {
				if p, err := peer.IDFromBytes(g.PeerID); err == nil {
					ask(p, g.Addrs)
				}
			}
		}
	}
	if answers == 0 {
		return errNoWindow
	}
	var w windowWalk
	if c.hookUnpinnedWindow() {
		w = walkWindow(v.Desc, got) // the rule before: whatever came
	} else {
		var ok bool
		if w, ok = resolveWindow(v.Desc, got); !ok {
			// Every honest server of N's chain held each pinned record
			// and pool before it signed N open: none of them answered.
			c.log.Info("decoy window incomplete", "missing", w.missing)
			return errNoWindow
		}
	}
	c.mu.Lock()
	c.decoys.set(w.pools)
	c.windowRecs = w.recs
	c.windowBudget = w.budget
	c.mu.Unlock()
	return nil
}

// windowRetries bounds how often a client asks a server that answered
// errWindowBusy again for one window.
const windowRetries = 4

// windowRetryDelay draws the wait before a busy server is asked again:
// uniform below an eighth of the registration window, so that the
// windowRetries asks end within its first half and clients asked to wait
// spread out. Only the retry's timing depends on it, and it is fresh
// randomness, none of the client's CSPRNG stream (the decoy draws read
// the same bytes whatever happens here).
func windowRetryDelay(v *view) time.Duration {
	span := time.Duration(v.Desc.Params.RegWindowMs) * time.Millisecond / 8
	if span <= 0 {
		return 0
	}
	return time.Millisecond + mrand.N(span)
}

// previousGroup returns the descriptor of the epoch before d (the one its
// certificate names) from items, or nil.
func previousGroup(d *wire.Descriptor, items []wire.WindowItem) *wire.Descriptor {
	prev := d.Previous
	if prev.Kind != wire.CertFinal && prev.Kind != wire.CertAbort {
		return nil
	}
	for i := range items {
		if items[i].Epoch == prev.Epoch {
			if gd := linkedDescriptor(items[i].Group, prev.Epoch, prev.Number); gd != nil {
				return gd
			}
		}
	}
	return nil
}

// windowWalk is what a walk back from an open descriptor found, all of it
// pinned by that descriptor: the window (newest first), the checked
// records of its epochs by id, what the walked descriptors show of the
// servers' refusal budgets (client_budget.go), and the walked epochs'
// parts that checked (a server keeps them, window.go).
type windowWalk struct {
	pools  []*poolEpoch
	recs   map[[32]byte]*wire.Closing
	budget budgetView
	items  []wire.WindowItem
	// missing counts the pinned epochs whose record or pool no
	// candidate gave.
	missing int
}

// resolveWindow is the window of descriptor d (§6.3 v3): exactly the
// epochs d.Window pins, each with the record of the pinned digest and
// its pool, reached by the walk back from d. ok is false if any pinned
// epoch is missing: the window is not held.
func resolveWindow(d *wire.Descriptor, got []wire.WindowItem) (windowWalk, bool) {
	w := walkBack(d, got, true)
	return w, w.missing == 0
}

// walkWindow is the rule before the certified window, kept for the
// leader's choice of what to pin (and the tests' control): the last
// DecoyEpochs final epochs of number at most d.Number−2 whose record and
// pool some candidate gave.
func walkWindow(d *wire.Descriptor, got []wire.WindowItem) windowWalk {
	return walkBack(d, got, false)
}

// walkBack walks back from descriptor d through the certificates the
// descriptors carry, at most WindowLookback numbers, taking each part
// (descriptor, record, pool) from got only if it checks; with pinned, the
// window is the epochs d.Window pins, else walkWindow's rule.
func walkBack(d *wire.Descriptor, got []wire.WindowItem, pinned bool) windowWalk {
	cands := map[[32]byte][]*wire.WindowItem{}
	for i := range got {
		cands[got[i].Epoch] = append(cands[got[i].Epoch], &got[i])
	}
	refs := map[[32]byte]wire.WindowRef{}
	if pinned {
		for _, r := range d.Window {
			refs[r.Epoch] = r
		}
	}
	w := windowWalk{recs: map[[32]byte]*wire.Closing{}, budget: budgetView{chains: map[uint64][]peer.ID{}}}
	prev := d.Previous
	w.budget.certs = append(w.budget.certs, prev)
	for step := 0; step < WindowLookback; step++ {
		if prev.Kind != wire.CertFinal && prev.Kind != wire.CertAbort {
			break
		}
		id, num := prev.Epoch, prev.Number
		var gd *wire.Descriptor
		var gb []byte
		for _, x := range cands[id] {
			if gd = linkedDescriptor(x.Group, id, num); gd != nil {
				gb = x.Group
				break
			}
		}
		if gd == nil {
			break // the walk cannot go further back
		}
		it := wire.WindowItem{Number: num, Epoch: id, Group: gb}
		var pe *poolEpoch
		var rec *wire.Closing
		if r, ok := refs[id]; pinned && ok && r.Number == num && prev.Kind == wire.CertFinal {
			pe, rec, it.Closing, it.Pool = checkedPool(gd, id, cands[id], &r.Closing)
			delete(refs, id)
		} else if !pinned && prev.Kind == wire.CertFinal && num+2 <= d.Number && len(w.pools) < DecoyEpochs {
			pe, rec, it.Closing, it.Pool = checkedPool(gd, id, cands[id], nil)
		}
		if pe != nil {
			pe.number = num
			w.pools = append(w.pools, pe)
			w.recs[id] = rec
		}
		w.items = append(w.items, it)
		if ch, err := descChain(gd); err == nil {
			w.budget.chains[num] = ch
		}
		prev = gd.Previous
		w.budget.certs = append(w.budget.certs, prev)
	}
	w.missing = len(d.Window) - len(w.pools)
	if !pinned {
		w.missing = 0
	}
	return w
}

// descChain returns a descriptor's chain.
func descChain(d *wire.Descriptor) ([]peer.ID, error) {
	out := make([]peer.ID, 0, len(d.Group))
	for _, g := range d.Group {
		p, err := peer.IDFromBytes(g.PeerID)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// linkedDescriptor decodes a descriptor without clients and returns it if
// it is the one of epoch id and number num.
func linkedDescriptor(b []byte, id [32]byte, num uint64) *wire.Descriptor {
	if len(b) == 0 {
		return nil
	}
	var d wire.Descriptor
	if err := d.Unmarshal(b, genericLimits()); err != nil || d.Number != num || epochID(&d) != id {
		return nil
	}
	return &d
}

// checkedPool returns epoch id's pool and record, and their encodings,
// from the first candidates whose record verifies against the epoch's
// chain (and, if want is set, has that digest) and whose pool matches it.
func checkedPool(d *wire.Descriptor, id [32]byte, cands []*wire.WindowItem, want *[32]byte) (*poolEpoch, *wire.Closing, []byte, []byte) {
	chain, err := descChain(d)
	if err != nil {
		return nil, nil, nil, nil
	}
	v := &view{ID: id, Desc: d, Chain: chain}
	var rec *wire.Closing
	var rb []byte
	for _, x := range cands {
		var c wire.Closing
		if len(x.Closing) > 0 && c.Unmarshal(x.Closing, wire.MaxClosingRounds) == nil && checkClosing(v, &c) == nil && (want == nil || closingDigest(&c) == *want) {
			rec, rb = &c, x.Closing
			break
		}
	}
	if rec == nil {
		return nil, nil, nil, nil
	}
	for _, x := range cands {
		var p wire.DecoyPool
		if len(x.Pool) > 0 && p.Unmarshal(x.Pool) == nil && checkPool(rec, &p) == nil {
			return &poolEpoch{id: id, total: p.Total, sample: p.Sample}, rec, rb, x.Pool
		}
	}
	return nil, nil, nil, nil
}

// sitOutLine tells the user why the client sat an epoch out.
func sitOutLine(id [32]byte) string {
	return fmt.Sprintf("epoch %x: sitting out: no server of the chain gave the decoy window; this may be a targeted exclusion of this client", id[:4])
}

// holdWindow fetches epoch v's window, then draws the client's random
// offset into the first third of the registration window and waits it
// out: registration never comes before the window is held, and the draw
// is made only then, so nothing drawn goes to waste on a fetch that
// fails. If every server fails, the client sits the epoch out and pauses
// its jobs (sitOut).
func (c *Client) holdWindow(ctx context.Context, v *view) error {
	if c.hookOwnRule() {
		return c.takeChain(v.Desc, v.Chain, budgetView{}) // the old rule: no window
	}
	if err := c.fetchWindow(ctx, v); err != nil {
		c.sitOut(v.ID)
		return err
	}
	c.mu.Lock()
	bv := c.windowBudget
	c.mu.Unlock()
	if err := c.takeChain(v.Desc, v.Chain, bv); err != nil {
		return fmt.Errorf("node: epoch refused: %w", err)
	}
	c.hookWindow(v)
	var b [8]byte
	if _, err := io.ReadFull(c.rand, b[:]); err != nil {
		return err
	}
	span := time.Duration(v.Desc.Params.RegWindowMs) * time.Millisecond / 3
	if span <= 0 {
		return nil
	}
	select {
	case <-time.After(time.Duration(binary.BigEndian.Uint64(b[:]) % uint64(span))):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
