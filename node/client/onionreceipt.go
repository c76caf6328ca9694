package client

import (
	"context"
	"sync"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Receipts of onions (docs/protocol.md §5.4): the primary answers every
// submission with its signed receipt of the onion. The client keeps each
// until its round's list is final; if its epoch ends before, it shows
// those it holds to every chain server but its primary, where a primary
// that also signed the slot dry for that round is charged (node/held.go).
// Every client does the same on the same public event (its epoch ended
// before its last round) with what its own primary signed.

// takeReceipt keeps the primary's receipt of sub, the reply rep, if it
// is one: signed by the primary, of this slot, round and onion (digest,
// the onion's SubmissionDigest).
func (e *cepoch) takeReceipt(sub *wire.Submit, digest [32]byte, rep []byte) {
	c := e.c
	var r wire.OnionReceipt
	if err := r.Unmarshal(rep); err != nil {
		c.log.Debug("submission not receipted", "round", sub.Round, "err", err)
		return
	}
	if r.Round != sub.Round || r.Slot != sub.Slot || int(r.Server) != e.pidx || r.Digest != digest {
		c.log.Debug("a receipt of another onion", "round", sub.Round)
		return
	}
	if err := proto.CheckOnionReceipt(&r, e.v.ID, e.v.Chain); err != nil {
		c.log.Debug("receipt unsigned", "round", sub.Round, "err", err)
		return
	}
	if e.onionReceipts == nil {
		e.onionReceipts = map[uint32]wire.OnionReceipt{}
	}
	e.onionReceipts[sub.Round] = r
}

// showReceipts hands the receipts of the rounds without a final list to
// every chain server but the primary, at an epoch that ended early.
func (e *cepoch) showReceipts(ctx context.Context) {
	c := e.c
	if len(e.onionReceipts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range e.v.Chain {
		if i == e.pidx {
			continue
		}
		for _, r := range e.onionReceipts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.callTo(ctx, p, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeShowReceipt, Body: r.Marshal(), Timeout: transport.ShortTimeout}); err != nil {
					c.log.Debug("receipt not shown", "server", p.ShortString(), "round", r.Round, "err", err)
				}
			}()
		}
	}
	wg.Wait()
}
