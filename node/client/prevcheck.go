package client

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/indexsync"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The epoch before N at N's start (§6.4 v3). N's window ends at N − 2, so
// the manifests N − 1's lists named are pinned by no record N's
// descriptor carries; a client of N − 1 checked them at N − 1's end, a
// client that was not in N − 1 would check them only at N + 1's start,
// through the window. So every client of N checks them at N's start,
// with the window's: N's previous epoch (the one N's previous certificate
// names, or past a timeout the one its gap reaches), from the closing
// record every server of that epoch's chain signed and the pool it pins,
// taken from the window's replies or asked again, with the window's own
// request, of every server of both chains. Which epochs a client checks
// at N's start thus follows N's descriptor alone.

// prevEpoch is N's previous epoch, final and not in N's window.
type prevEpoch struct {
	v      *proto.View // N's open view: the request and N's chain
	number uint64
	id     [32]byte
	desc   *wire.Descriptor // pinned by N's certificate; nil if none came
	pool   *proto.PoolEpoch // once a record and its pool checked
}

// prevOf returns N's previous epoch (v is N's open view) if it ran
// rounds (a final certificate) and is not in N's window w, with its pool
// if the replies got hold it.
func prevOf(v *proto.View, got []wire.WindowItem, w *proto.WindowWalk) *prevEpoch {
	cert, ok := proto.CrossGap(v.Desc)
	if !ok || cert.Kind != wire.CertFinal {
		return nil
	}
	for _, pe := range w.Pools {
		if pe.ID == cert.Epoch {
			return nil
		}
	}
	p := &prevEpoch{v: v, number: cert.Number, id: cert.Epoch, desc: proto.PreviousGroup(v.Desc, got)}
	p.take(got)
	return p
}

// take keeps the first record of the epoch in got that carries every
// signature of its chain, with a pool that matches it: one server signs
// one closing proposal of an epoch, so with one honest signer no two
// such records exist.
func (p *prevEpoch) take(got []wire.WindowItem) {
	if p.pool != nil || p.desc == nil {
		return
	}
	var cands []*wire.WindowItem
	for i := range got {
		if got[i].Epoch == p.id {
			cands = append(cands, &got[i])
		}
	}
	if pe, _, _, _ := proto.CheckedPool(p.desc, p.id, cands, nil); pe != nil {
		pe.Number = p.number
		p.pool = pe
	}
}

// fetchPrev asks every server of N's chain and of p's for N's window
// again, at once, until one gives p's record and pool or ctx ends.
func (c *Client) fetchPrev(ctx context.Context, p *prevEpoch) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := (&wire.WindowReq{Epoch: p.v.ID, Number: p.v.Desc.Number}).Marshal()
	res := make(chan []wire.WindowItem)
	asked := map[peer.ID]bool{}
	ask := func(group []wire.GroupEntry) {
		for _, g := range group {
			q, err := peer.IDFromBytes(g.PeerID)
			if err != nil || q == c.h.ID() || asked[q] {
				continue
			}
			asked[q] = true
			addAddrs(c.h, q, g.Addrs)
			go func() {
				r := transport.Request{Proto: transport.ProtoClient, Type: wire.TypeWindowReq, Body: req, Timeout: transport.ShortTimeout}
				rep, err := c.callTo(ctx, q, r)
				for try := 0; try < windowRetries && errors.Is(err, proto.ErrWindowBusy); try++ {
					// Every client whose replies lacked the record
					// asks at once: a busy server is asked again.
					select {
					case <-time.After(indexsync.RetryDelay()):
					case <-ctx.Done():
					}
					rep, err = c.callTo(ctx, q, r)
				}
				var w wire.Window
				if err == nil {
					err = w.Unmarshal(rep)
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					c.log.Info("closing record of the epoch before: a chain server failed", "peer", q.ShortString(), "err", err)
				}
				select {
				case res <- w.Items:
				case <-ctx.Done():
				}
			}()
		}
	}
	ask(p.v.Desc.Group)
	if p.desc != nil {
		ask(p.desc.Group)
	}
	for range asked {
		select {
		case items := <-res:
			p.take(items)
			if p.pool != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
