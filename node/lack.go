package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// A missing input batch (docs/protocol.md §5.2 v3, "a void that names
// nobody does not end the epoch"). Server s learns of its predecessor's
// signed batch of round r from the root that every server broadcasts to
// the whole chain (roots.go); if the batch itself has not come once the
// hop has had its time, s asks for it again. The predecessor is the only
// holder: a middle batch goes to one server, and everyone else holds its
// root alone. The predecessor keeps a batch it could not deliver for the
// fetch window and hands it, on request, to its successor only; s takes
// it like any batch (sender, signature, root against the broadcast one,
// size caps: onBatch). If the batch is still missing when the window
// closes, s passes on nothing for r (never the entries it has: that would
// show the next server which position is missing) and tells every chain
// server that it lacks the batch; S_0 then has the round signed void, and
// the void is charged to s's own refusal budget (every other server
// attests it lacks s's part, charges.go), a private abort that names
// nobody. One void an epoch, as for a missing
// publication (void.go): a second ends the epoch.

// errDelivering answers a fetch of a batch whose delivery still runs: the
// asker waits on, up to the delivery's own deadline, rather than claim a
// lack that is only a slow transfer (and no second copy is sent).
var errDelivering = errors.New("node: batch still being delivered")

// delivering reports whether err is the predecessor's errDelivering.
func delivering(err error) bool {
	var re *wire.RemoteError
	return errors.As(err, &re) && re.Text == errDelivering.Error()
}

// lackWindow is how long, from the root's arrival, a server waits for and
// fetches its input batch before it claims the lack: the hop (fetchGrace)
// plus one round interval, both taken from the round limit, so that the
// claim reaches S_0 before S_0 gives up on the round's publication itself
// (mixLoop waits a round limit for it).
func lackWindow(e *sepoch) time.Duration {
	return time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond / 2
}

// fetchGrace is how long the batch itself may still take after its root.
func fetchGrace(e *sepoch) time.Duration { return lackWindow(e) / 4 }

// keptWindow is how long a server keeps a batch it could not deliver: the
// successor's whole window, which starts later (at the root's arrival).
func keptWindow(e *sepoch) time.Duration {
	return time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
}

// keepUndelivered keeps the signed batch b of round r, which could not be
// delivered to the successor, for its fetch (onGetBatch) until keptWindow
// has passed. The bytes are a copy: the entries live in reused buffers.
func (s *Server) keepUndelivered(e *sepoch, r uint32, b *wire.Batch) {
	raw := b.Marshal()
	s.mu.Lock()
	e.round(r).kept = raw
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(keptWindow(e))
		defer t.Stop()
		select {
		case <-s.ctx.Done():
		case <-t.C:
		}
		s.mu.Lock()
		e.round(r).kept = nil
		s.mu.Unlock()
	}()
}

// onGetBatch serves a kept batch to the server it was for.
func (s *Server) onGetBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
	q, e, err := s.batchRef(body)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	m := len(v.Chain)
	if int(q.S) == m {
		return s.servePub(e, from, q.Round)
	}
	if int(q.S) != e.pos+1 || int(q.S) >= m || v.Chain[q.S] != from || q.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: batch asked by a server it is not for")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := e.admit(q.Round); err != nil {
		return 0, nil, err
	}
	x := e.round(q.Round)
	raw := x.kept
	if raw == nil && x.sending {
		return 0, nil, errDelivering
	}
	if raw == nil {
		return 0, nil, fmt.Errorf("node: no undelivered batch of round %d", q.Round)
	}
	return wire.TypeBatch, raw, nil
}

// watchInput starts, once per round, the wait for round r's input batch
// whose signed root has come: after fetchGrace it asks the predecessor
// for it until lackWindow has passed, then claims the lack. Call without
// s.mu.
func (s *Server) watchInput(e *sepoch, r uint32) {
	v := e.final
	if e.pos < 1 || e.pos >= len(v.Chain) {
		return
	}
	s.mu.Lock()
	if e.admit(r) != nil {
		s.mu.Unlock()
		return
	}
	x := e.round(r)
	if x.watching || x.batchIn[0] || x.void || e.ended {
		s.mu.Unlock()
		return
	}
	x.watching = true
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// A round under a round blame is the blame's to void.
		settled := func() bool {
			x := e.round(r)
			return x.batchIn[0] || x.void || e.ended || e.roundBlamed(r)
		}
		// The wait counts from the root's arrival, or for a root of a
		// round not yet open here (a corrupt predecessor's) from the
		// latest S_0 could mix it (partCame): from the root alone this
		// server would claim a lack, and be charged for it, before its
		// input could come.
		var start time.Time
		_ = s.waitFor(s.ctx, func() bool {
			var ok bool
			start, ok = e.partCame(r, e.pos-1)
			return ok || settled()
		})
		if wait := time.Until(start); wait > 0 {
			ctx, cancel := context.WithTimeout(s.ctx, wait)
			_ = s.waitFor(ctx, settled)
			cancel()
		}
		start = time.Now()
		deadline := start.Add(lackWindow(e))
		ctx, cancel := context.WithTimeout(s.ctx, fetchGrace(e))
		_ = s.waitFor(ctx, settled)
		cancel()
		pred := v.Chain[e.pos-1]
		q := (&wire.BatchRef{Epoch: v.ID, Round: r, S: uint16(e.pos)}).Marshal()
		for {
			s.mu.Lock()
			done := settled()
			s.mu.Unlock()
			if done || s.ctx.Err() != nil {
				return
			}
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			ctx, cancel := context.WithTimeout(s.ctx, left)
			raw, err := call(ctx, s.h, pred, request{Proto: ProtoRound, Type: wire.TypeGetBatch, Body: q, Timeout: left})
			cancel()
			if err == nil {
				// Taken like any batch from the predecessor: sender,
				// signature, root (against the broadcast one) and caps.
				if _, _, err = s.onBatch(pred, raw); err == nil {
					s.log.Info("missing batch fetched", "round", r)
					continue
				}
			}
			if delivering(err) {
				// Still on its way: wait on, up to the delivery's
				// own deadline (a predecessor that keeps saying so
				// leaves the round to the publication's void).
				if later := time.Now().Add(fetchGrace(e)); later.After(deadline) && later.Before(start.Add(bulkTimeout)) {
					deadline = later
				}
			}
			s.log.Debug("fetch batch", "round", r, "err", err)
			ctx, cancel = context.WithTimeout(s.ctx, min(250*time.Millisecond, max(time.Until(deadline), 0)))
			_ = s.waitFor(ctx, settled)
			cancel()
		}
		s.claimLack(e, r)
	}()
}

// claimLack gives round r up here (a late batch is dropped: onBatch) and
// tells every chain server that this server lacks its input.
func (s *Server) claimLack(e *sepoch, r uint32) {
	v := e.final
	s.mu.Lock()
	x := e.round(r)
	if x.batchIn[0] || x.void || e.ended || e.roundBlamed(r) {
		s.mu.Unlock()
		return
	}
	x.lacked, x.lackBy = true, uint16(e.pos)
	s.mu.Unlock()
	s.log.Warn("input batch missing after the fetch window: round passes on nothing", "round", r)
	body := (&wire.BatchRef{Epoch: v.ID, Round: r, S: uint16(e.pos)}).Marshal()
	// S_0 proposes the void as soon as it has the notice, and a server
	// asked to sign a void it has no notice for charges the last server:
	// so the others get the notice first (each has it once it acks), and
	// S_0 last. (A claimant is never S_0.)
	others := make([]peer.ID, 0, len(v.Chain)-2)
	for _, p := range v.Chain[1:] {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, shortTimeout)
	defer cancel()
	for _, to := range [][]peer.ID{others, v.Chain[:1]} {
		if len(to) == 0 {
			continue
		}
		if _, err := s.each(ctx, to, request{Proto: ProtoRound, Type: wire.TypeLack, Body: body, Timeout: shortTimeout}); err != nil {
			s.log.Debug("lack notice", "round", r, "err", err)
		}
	}
}

// onLack records a chain server's claim that it lacks its input of a
// round (the void is then charged to it: its part is what every other
// server lacks, charges.go). S_0 has the round signed void at once.
func (s *Server) onLack(from peer.ID, body []byte) (wire.Type, []byte, error) {
	q, e, err := s.batchRef(body)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	if q.S < 1 || int(q.S) >= len(v.Chain) || v.Chain[q.S] != from || q.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: lack claimed by the wrong server")
	}
	s.mu.Lock()
	if err := e.admit(q.Round); err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	if _, open := e.openAt[q.Round]; !open {
		// A lack of a round not open here is no lack yet: S_0 would
		// void a round it never mixed, and pay for the claim.
		s.mu.Unlock()
		return 0, nil, fmt.Errorf("node: round %d is not open here", q.Round)
	}
	x := e.round(q.Round)
	if x.lackBy == 0 {
		x.lackBy = q.S
	}
	s.mu.Unlock()
	s.log.Warn("a server lacks its input batch", "round", q.Round, "position", q.S)
	if e.pos == 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.voidRound(e, q.Round)
		}()
	}
	return wire.TypeAck, ack, nil
}

// batchRef decodes a GetBatch or Lack body and finds its epoch.
func (s *Server) batchRef(body []byte) (wire.BatchRef, *sepoch, error) {
	var q wire.BatchRef
	if err := q.Unmarshal(body); err != nil {
		return q, nil, err
	}
	e, err := s.epochFor(q.Epoch)
	return q, e, err
}
