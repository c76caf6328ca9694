package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/store"
)

// A client's side of the group's decoy window (docs/protocol.md §6.3 v3).
// Before it registers in epoch N, a client holds N's window: the last
// DecoyEpochs epochs of number at most N−2 that have a closing record,
// found by walking back from N's descriptor (each epoch's descriptor is
// pinned by the certificate the next one carries, so every client of N
// walks the same epochs), each with its pool checked against its record.
// It asks every server of N's chain at once and takes each part from
// whichever server gives one that checks: the outcome is the honest
// server's answer whatever the others send. N−1 is left out: its record
// may still be in the making while N registers, and whether a client
// held it would then follow when it asked. The window is kept in the
// client database, so that a restarted client is no newcomer.

// loadWindow reads the kept window once.
func (c *Client) loadWindow() {
	if c.window != nil {
		return
	}
	c.window = map[[32]byte]*wire.WindowItem{}
	if c.db == nil {
		return
	}
	kept, err := c.db.DecoyWindow()
	if err != nil {
		c.log.Warn("kept decoy window unreadable; fetching it again", "err", err)
		return
	}
	for id, b := range kept {
		var w wire.Window
		if w.Unmarshal(b) == nil && len(w.Items) == 1 && w.Items[0].Epoch == id {
			c.window[id] = &w.Items[0]
		}
	}
}

// errNoWindow: no server of the chain answered for the window.
var errNoWindow = errors.New("node: no server of the chain gave the decoy window")

// fetchWindow makes the window of the open epoch v the client's decoy
// pool. It returns errNoWindow if every server of the chain failed.
func (c *Client) fetchWindow(ctx context.Context, v *view) error {
	c.mu.Lock()
	c.loadWindow()
	var held [][32]byte
	for id, it := range c.window {
		if len(it.Closing) > 0 && len(held) < wire.MaxWindowItems {
			held = append(held, id)
		}
	}
	c.mu.Unlock()
	req := (&wire.WindowReq{Epoch: v.id, Number: v.desc.Number, Held: held}).Marshal()
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		got     []wire.WindowItem
		answers int
	)
	for i, p := range v.chain {
		if p == c.h.ID() {
			continue
		}
		c.addAddrs(p, v.desc.Group[i].Addrs)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := c.callPeer(ctx, p, request{Proto: ProtoClient, Type: wire.TypeWindowReq, Body: req, Timeout: shortTimeout})
			var w wire.Window
			if err == nil {
				err = w.Unmarshal(rep)
			}
			if err != nil {
				c.log.Info("decoy window from a chain server failed", "peer", p.ShortString(), "err", err)
				return
			}
			mu.Lock()
			answers++
			got = append(got, w.Items...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if answers == 0 {
		return errNoWindow
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	eps, keep := walkWindow(v.desc, c.window, got)
	c.window = keep
	c.decoys.set(eps)
	if c.db != nil {
		kept := map[store.ID][]byte{}
		for id, it := range keep {
			kept[store.ID(id)] = (&wire.Window{Items: []wire.WindowItem{*it}}).Marshal()
		}
		if err := c.db.PutDecoyWindow(kept); err != nil {
			c.log.Warn("keep the decoy window", "err", err)
		}
	}
	return nil
}

// walkWindow walks back from descriptor d through the certificates the
// descriptors carry, taking each part (descriptor, record, pool) from
// held or got only if it checks, and returns the window (newest first)
// and the items to keep.
func walkWindow(d *wire.Descriptor, held map[[32]byte]*wire.WindowItem, got []wire.WindowItem) ([]*poolEpoch, map[[32]byte]*wire.WindowItem) {
	cands := map[[32]byte][]*wire.WindowItem{}
	for id, it := range held {
		cands[id] = append(cands[id], it)
	}
	for i := range got {
		cands[got[i].Epoch] = append(cands[got[i].Epoch], &got[i])
	}
	keep := map[[32]byte]*wire.WindowItem{}
	var win []*poolEpoch
	prev := d.Previous
	for step := 0; step < WindowLookback && len(win) < DecoyEpochs; step++ {
		if prev.Kind != wire.CertFinal && prev.Kind != wire.CertAbort {
			break
		}
		id, num := prev.Epoch, prev.Number
		var gd *wire.Descriptor
		it := &wire.WindowItem{Number: num, Epoch: id}
		for _, x := range cands[id] {
			if gd = linkedDescriptor(x.Group, id, num); gd != nil {
				it.Group = x.Group
				break
			}
		}
		if gd == nil {
			break // the walk cannot go further back
		}
		keep[id] = it
		if prev.Kind == wire.CertFinal && num+2 <= d.Number {
			if pe := checkedPool(gd, id, cands[id], it); pe != nil {
				pe.number = num
				win = append(win, pe)
			}
		}
		prev = gd.Previous
	}
	return win, keep
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

// checkedPool returns epoch id's pool from the first candidates whose
// record verifies against the epoch's chain and whose pool matches it,
// and notes both in it.
func checkedPool(d *wire.Descriptor, id [32]byte, cands []*wire.WindowItem, it *wire.WindowItem) *poolEpoch {
	v := &view{id: id, desc: d}
	for _, g := range d.Group {
		p, err := peer.IDFromBytes(g.PeerID)
		if err != nil {
			return nil
		}
		v.chain = append(v.chain, p)
	}
	var rec *wire.Closing
	for _, x := range cands {
		var c wire.Closing
		if len(x.Closing) > 0 && c.Unmarshal(x.Closing, wire.MaxClosingRounds) == nil && checkClosing(v, &c) == nil {
			rec, it.Closing = &c, x.Closing
			break
		}
	}
	if rec == nil {
		return nil
	}
	for _, x := range cands {
		var p wire.DecoyPool
		if len(x.Pool) > 0 && p.Unmarshal(x.Pool) == nil && checkPool(rec, &p) == nil {
			it.Pool = x.Pool
			return &poolEpoch{id: id, total: p.Total, sample: p.Sample}
		}
	}
	it.Closing = nil // held again only with its pool
	return nil
}

// sitOutLine tells the user why the client sat an epoch out.
func sitOutLine(id [32]byte) string {
	return fmt.Sprintf("epoch %x: sitting out: no server of the chain gave the decoy window; this may be a targeted exclusion of this client", id[:4])
}

// holdWindow fetches epoch v's window and waits for the client's random
// offset into the registration window: registration never comes before
// the window is held, and its time says nothing about how long the fetch
// took (a newcomer fetches more). If every chain server fails, the
// client sits the epoch out and tells its user.
func (c *Client) holdWindow(ctx context.Context, v *view) error {
	if c.ownRule() {
		return nil // the old rule: no window
	}
	var b [8]byte
	if _, err := io.ReadFull(c.rand, b[:]); err != nil {
		return err
	}
	span := time.Duration(v.desc.Params.RegWindowMs) * time.Millisecond / 3
	at := time.Now()
	if span > 0 {
		at = at.Add(time.Duration(binary.BigEndian.Uint64(b[:]) % uint64(span)))
	}
	if err := c.fetchWindow(ctx, v); err != nil {
		c.progress("%s", sitOutLine(v.id))
		return err
	}
	c.hookWindow(v.id)
	select {
	case <-time.After(time.Until(at)):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
