package client

import (
	"context"
	"sort"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// A leaving client's hand-over of cover onions (handover.go, §5.4).

// handOver seals the onions of the rounds after the last one sealed,
// at most handoverMax and never beyond the epoch, and hands them to the
// primary (§5.4 v3). Called when the client leaves mid-epoch, before the
// epoch's secrets are dropped; it gives up at the first refusal (the
// epoch may have ended) and within Tunables.HandoverTimeout.
func (e *cepoch) handOver() {
	c := e.c
	p := e.v.Desc.Params
	b, k := int(p.ChunkSize), int(p.K)
	first := e.sealedNext
	last := min(p.Rounds, first+proto.HandoverMax)
	if first >= last {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timing.HandoverTimeout)
	defer cancel()
	send := func(r uint32, onion []byte, keep bool, mark *store.ShareMark) error {
		sub := wire.Submit{Epoch: e.v.ID, Round: r, Slot: e.slot, Onion: onion}
		copy(sub.Sig[:], mix.SignSubmission(e.regKey, mix.EpochID(e.v.ID), uint64(r), e.slot, onion))
		if keep {
			// As a submission: a chunk it carries counts as sent
			// (share_resume.go), so that a run after this one does
			// not send it again under another pseudonym.
			if err := e.keepSubmission(&sub, mark); err != nil {
				return err
			}
		}
		_, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeHandover, Segments: sub.Segments(), Timeout: transport.ShortTimeout})
		return err
	}
	// The onions sealed already whose rounds are not over: a send that
	// the leave cut short may not have reached the primary. The same
	// bytes again (§5.1 v2); one the primary holds is acknowledged.
	var kept []uint32
	for r := range e.onions {
		kept = append(kept, r)
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i] < kept[j] })
	for _, r := range kept {
		if err := send(r, e.onions[r], false, nil); err != nil {
			c.log.Debug("hand over", "round", r, "err", err)
		}
	}
	sent := 0
	for r := first; r < last; r++ {
		// What the client would have sent in round r: the next queued
		// chunk, the jobs' requests, decoys (issue 26: its pseudonym
		// does not stop at the departure).
		pl := &mix.Payload{Kind: mix.KindCover, Requests: make([][32]byte, k)}
		var mark *store.ShareMark
		if hooks.CoverHandover(&c.hk) {
			// The rule before, a test's control only: cover, decoys.
			c.mu.Lock()
			copy(pl.Requests, c.backgroundRequests(nil, k))
			c.mu.Unlock()
		} else {
			mark = e.fillPayload(r, pl)
		}
		raw, err := mix.EncodePayload(pl, b, k, mix.EpochID(e.v.ID), uint64(r), e.cs, c.rand)
		if err != nil {
			c.log.Debug("hand over", "err", err)
			return
		}
		keys, err := e.cs.LayerKeys(mix.EpochID(e.v.ID), uint64(r), e.v.Y, e.v.Yp)
		if err != nil {
			c.log.Debug("hand over", "err", err)
			return
		}
		onion, err := mix.Seal(mix.EpochID(e.v.ID), uint64(r), keys, raw)
		mix.CloseLayerKeys(keys)
		if err != nil {
			c.log.Debug("hand over", "err", err)
			return
		}
		e.sealedNext = r + 1 // sealed once: never again (§5.1 v2)
		if err := send(r, onion, true, mark); err != nil {
			c.log.Debug("hand over", "round", r, "err", err)
			break
		}
		sent++
	}
	c.log.Info("left mid-epoch: onions handed to the primary", "onions", sent)
}
