package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
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
// a reply gives N−1's descriptor (pinned by v's previous certificate),
// and returns once the window is held, or every reply came. It returns
// errNoWindow if no server gave every pinned record and pool.
func (c *Client) fetchWindow(ctx context.Context, v *proto.View) error {
	req := (&wire.WindowReq{Epoch: v.ID, Number: v.Desc.Number}).Marshal()
	res := make(chan windowReply)
	// Replies still out when the window is held are read and dropped.
	done := make(chan struct{})
	defer close(done)
	asked := map[peer.ID]bool{}
	pending := 0
	ask := func(p peer.ID, addrs [][]byte) {
		if p == c.h.ID() || asked[p] {
			return
		}
		asked[p] = true
		addAddrs(c.h, p, addrs)
		pending++
		go func() {
			rep, err := c.callTo(ctx, p, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeWindowReq, Body: req, Timeout: transport.ShortTimeout})
			for try := 0; try < windowRetries && errors.Is(err, proto.ErrWindowBusy); try++ {
				// A busy server (every client of the epoch asks at
				// once) is asked again after a random delay.
				select {
				case <-time.After(windowRetryDelay(v)):
				case <-ctx.Done():
				}
				rep, err = c.callTo(ctx, p, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeWindowReq, Body: req, Timeout: transport.ShortTimeout})
			}
			var w wire.Window
			if err == nil {
				err = w.Unmarshal(rep)
			}
			select {
			case res <- windowReply{p, w.Items, err}:
			case <-done:
			}
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
		if !prevAsked {
			if gd := proto.PreviousGroup(v.Desc, r.items); gd != nil {
				prevAsked = true
				for _, g := range gd.Group {
					if p, err := peer.IDFromBytes(g.PeerID); err == nil {
						ask(p, g.Addrs)
					}
				}
			}
		}
		// Every server of both chains is asked; once the window is
		// held, no later reply can change it (each part is pinned: a
		// descriptor by its epoch id, a record by its digest, a pool by
		// the record), so the client waits for none: a server that
		// stalls its answer delays no client that another server of the
		// chains answered.
		if prevAsked && !hooks.UnpinnedWindow(&c.hk) {
			if _, ok := proto.ResolveWindow(v.Desc, got); ok {
				break
			}
		}
	}
	if answers == 0 {
		return errNoWindow
	}
	var w proto.WindowWalk
	if hooks.UnpinnedWindow(&c.hk) {
		w = proto.WalkWindow(v.Desc, got) // the rule before: whatever came
	} else {
		var ok bool
		if w, ok = proto.ResolveWindow(v.Desc, got); !ok {
			// Every honest server of N's chain held each pinned record
			// and pool before it signed N open: none of them answered.
			c.log.Info("decoy window incomplete", "missing", w.Missing)
			return errNoWindow
		}
	}
	prev := prevOf(v, got, &w)
	c.mu.Lock()
	c.decoys.set(w.Pools)
	c.prev = prev
	c.windowRecs = w.Recs
	c.windowBudget = budgetView(w.Budget)
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
func windowRetryDelay(v *proto.View) time.Duration {
	span := time.Duration(v.Desc.Params.RegWindowMs) * time.Millisecond / 8
	if span <= 0 {
		return 0
	}
	return time.Millisecond + mrand.N(span)
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
// its jobs (queue.pauseAll).
func (c *Client) holdWindow(ctx context.Context, v *proto.View) error {
	if hooks.OwnRule(&c.hk) {
		return c.takeChain(v.Desc, v.Chain, budgetView{}) // the old rule: no window
	}
	if err := c.fetchWindow(ctx, v); err != nil {
		// Every job pauses until its user resumes it: the next epoch's
		// traffic of a job would otherwise follow the exclusion.
		c.progress("%s", sitOutLine(v.ID))
		c.mu.Lock()
		c.q.pauseAll()
		c.notify()
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	bv := c.windowBudget
	c.mu.Unlock()
	if err := c.takeChain(v.Desc, v.Chain, bv); err != nil {
		return fmt.Errorf("node: epoch refused: %w", err)
	}
	hooks.Window(&c.hk, v, func() []*proto.PoolEpoch {
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.Clone(c.decoys.epochs)
	})
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
