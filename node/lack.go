package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A missing input batch (docs/protocol.md §5.2 v3, "a void that names
// nobody does not end the epoch", and "a batch its receiver lacks is
// relayed"). Server s learns of its predecessor's signed batch of round r
// from the root that every server broadcasts to the whole chain
// (roots.go); if the batch itself has not come once the hop has had its
// time (fetchGrace), s asks the predecessor for it again and, at once,
// every other chain server: that ask is the relay note. A server noted
// so fetches the batch from its signer (the signer keeps every batch it
// sends for keptWindow and hands a few copies to any chain server that
// asks), checks it as if it came from the signer (signature, recomputed
// root, the epoch's batch cap) and hands it to s on request: a
// predecessor that withholds the batch from s alone no longer makes s
// late. For the dues (attest.go), a noted server counts s's part from
// when the batch came to it, or, if the signer never gave it the batch,
// attests the signer's part missing once the body's due has passed
// (bodyDue, relay.go): the void of a batch that nobody got is the signer's, never its
// honest receiver's. Only the root goes to every server on the normal
// path; the batch goes to the others only once its receiver said it
// lacks it (one batch of upload per server and round, not m).
//
// If the batch is still missing when the lack window closes, s passes on
// nothing for r (never the entries it has: that would show the next
// server which position is missing) and tells every chain server that it
// lacks the batch; S_0 has the round signed void once the noted servers'
// fetches are due, and the void is charged to the first
// part that more than half of the others attest they lacked: the signer's
// if they could not get the batch either, else s's own (charges.go). One
// void an epoch, as for a missing publication (void.go): a second ends
// the epoch.

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
// fetches its input batch before it claims the lack (blame.Dues.Window);
// fetchGrace how long the batch may still take after its root; keptWindow
// how long a server keeps a batch it sent.
func lackWindow(e *sepoch) time.Duration { return e.dues().Window() }

func fetchGrace(e *sepoch) time.Duration { return e.dues().Fetch() }

func keptWindow(e *sepoch) time.Duration { return e.dues().Kept() }

// reaskPause is the pause before a failed ask for the input batch is made
// again (blame.Dues.Reask).
func reaskPause(e *sepoch) time.Duration { return e.dues().Reask() }

// keepOut keeps the signed batch b of round r, which this server passes
// on, for the fetches of its successor and of the servers its successor
// noted (onGetBatch) until keptWindow has passed or the round's
// publication is here (onBatch), which shows that every server passed
// the round on, and which this server then hands out instead (pubfetch.go).
// The bytes are a copy: the entries live in reused buffers.
func (s *Server) keepOut(e *sepoch, r uint32, b *wire.Batch) {
	raw := b.Marshal()
	s.mu.Lock()
	if e.admit(r) != nil {
		s.mu.Unlock()
		return
	}
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

// onGetBatch serves a batch of a round: its signer's kept copy to any
// chain server (a few copies each), a noted holder's copy to the batch's
// receiver; the receiver's ask of a server that is not the signer is its
// relay note (noteLocked).
func (s *Server) onGetBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
	q, e, err := s.batchRef(body)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	m := len(v.Chain)
	if int(q.S) == m {
		return s.pub.Serve(pubEpoch(e), from, q.Round)
	}
	asker := slices.Index(v.Chain, from)
	if q.S < 1 || int(q.S) >= m || asker < 0 || from == s.h.ID() || q.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: batch asked by a server outside the chain")
	}
	refused := int(q.S) == e.pos+1 && asker == e.pos+1 && s.hookRun().RefuseSucc(q.Round)
	if int(q.S) != e.pos+1 && s.hookRun().StallRelay(q.Round) {
		select {
		case <-time.After(keptWindow(e)):
		case <-s.ctx.Done():
		}
		return 0, nil, errors.New("node: stalled (test)")
	}
	if int(q.S) == e.pos+1 && asker != e.pos+1 {
		if d := s.hookRun().ServeLate(q.Round); d > 0 {
			select {
			case <-time.After(d):
			case <-s.ctx.Done():
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := e.admit(q.Round); err != nil {
		return 0, nil, err
	}
	x := e.round(q.Round)
	if int(q.S) == e.pos+1 {
		// This server signed the batch.
		if asker == e.pos+1 && x.sending {
			return 0, nil, errDelivering
		}
		if refused {
			return 0, nil, errors.New("node: refused (test)")
		}
		if x.kept == nil {
			return 0, nil, fmt.Errorf("node: no batch of round %d kept here", q.Round)
		}
		if x.keptServed[asker] >= batchServes {
			return 0, nil, fmt.Errorf("node: batch of round %d handed to position %d already", q.Round, asker)
		}
		if x.keptServed == nil {
			x.keptServed = map[int]int{}
		}
		x.keptServed[asker]++
		return wire.TypeBatch, x.kept, nil
	}
	if asker != int(q.S) {
		return 0, nil, errors.New("node: a relayed batch goes to its receiver only")
	}
	n, err := s.noteLocked(e, q.Round, int(q.S)-1)
	if err != nil {
		return 0, nil, err
	}
	if n.body == nil {
		return 0, nil, fmt.Errorf("node: batch of round %d not held here yet", q.Round)
	}
	if n.served >= batchServes {
		return 0, nil, fmt.Errorf("node: batch of round %d relayed to position %d already", q.Round, asker)
	}
	n.served++
	return wire.TypeBatch, n.body, nil
}

// watchInput starts, once per round, the wait for round r's input batch
// whose signed root has come: after fetchGrace it asks the predecessor
// for it and, at once, the other chain servers (the relay note, whose
// copies it then asks for with one ask open at each: askRelay), until
// lackWindow has passed and, for an input from S_1 on, a lackWindow after
// the input's due (blame.Dues.LackEnd); then it claims the lack. Call
// without s.mu.
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
			return x.batchIn[0] || x.void || e.ended || e.blames.Walked(r)
		}
		// The wait counts from when the input's part came here
		// (partCame: never before the part before it, and for a root
		// of a round not yet open here from the latest S_0 could mix
		// it): from the root alone this server would claim a lack, and
		// be charged for it, before its input could come. A part
		// before it that comes meanwhile moves the start, so it is
		// read again on every change.
		for s.ctx.Err() == nil {
			var start time.Time
			var st bool
			_ = s.waitFor(s.ctx, func() bool {
				var ok bool
				start, ok = e.partCame(r, e.pos-1)
				st = settled()
				return ok || st
			})
			if st || !time.Now().Before(start) {
				break
			}
			ctx, cancel := context.WithDeadline(s.ctx, start)
			_ = s.waitFor(ctx, func() bool {
				at, ok := e.partCame(r, e.pos-1)
				return settled() || !ok || !at.Equal(start)
			})
			cancel()
		}
		start := time.Now()
		// The window lasts past the input's due here (LackEnd), read
		// again on every ask: a part that moves the due moves it.
		var delivery time.Time
		deadline := func() time.Time {
			s.mu.Lock()
			end := e.dues().LackEnd(e.times(r), start)
			s.mu.Unlock()
			if delivery.After(end) {
				end = delivery
			}
			return end
		}
		ctx, cancel := context.WithTimeout(s.ctx, fetchGrace(e))
		_ = s.waitFor(ctx, settled)
		cancel()
		pred := v.Chain[e.pos-1]
		q := (&wire.BatchRef{Epoch: v.ID, Round: r, S: uint16(e.pos)}).Marshal()
		done := func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return settled() || s.ctx.Err() != nil
		}
		if done() {
			return
		}
		// The relay runs beside the asks of the predecessor, up to the
		// lack window's end (a predecessor that says it is still
		// delivering does not hold the others' copies back).
		rctx, rcancel := context.WithCancel(s.ctx)
		relayed := make(chan struct{})
		go func() {
			defer close(relayed)
			if d := s.hookRun().NoteLate(r); d > 0 {
				wctx, cancel := context.WithTimeout(rctx, d)
				<-wctx.Done()
				cancel()
			}
			s.askRelay(rctx, e, r, q, settled)
		}()
		defer func() {
			rcancel()
			<-relayed
		}()
		for {
			if done() {
				return
			}
			left := time.Until(deadline())
			if left <= 0 {
				break
			}
			ctx, cancel := context.WithTimeout(s.ctx, left)
			raw, err := transport.Call(ctx, s.h, pred, transport.Request{Proto: ProtoRound, Type: wire.TypeGetBatch, Body: q, Timeout: left, Max: wire.BatchCap(v.Lim)})
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
				if later := time.Now().Add(fetchGrace(e)); later.After(deadline()) && later.Before(start.Add(transport.BulkTimeout)) {
					delivery = later
				}
			}
			s.log.Debug("fetch batch", "round", r, "err", err)
			ctx, cancel = context.WithTimeout(s.ctx, min(reaskPause(e), max(time.Until(deadline()), 0)))
			_ = s.waitFor(ctx, settled)
			cancel()
		}
		rcancel() // the relay asks end with the window, before the claim
		<-relayed
		if done() {
			return
		}
		s.claimLack(e, r)
	}()
}

// askRelay asks every chain server but this one and the predecessor for
// this server's input batch of round r (body q) until ctx ends: the first
// asks go out at once (each is a relay note: noteLocked), and each server
// is asked again a pause after its last ask failed, one ask open at each:
// a holder that holds an ask unanswered holds up only itself, and a copy
// that comes to any other holder by the body's due (blame.Dues.BodyDue) is
// taken within a pause and a transfer (TestRelayStallerFramesReceiver).
// A copy is taken as from the predecessor (onBatch: its signature, root
// and caps). Call without s.mu.
func (s *Server) askRelay(ctx context.Context, e *sepoch, r uint32, q []byte, settled func() bool) {
	v := e.final
	pred := v.Chain[e.pos-1]
	var others []peer.ID
	for _, p := range v.Chain {
		if p != s.h.ID() && p != pred {
			others = append(others, p)
		}
	}
	if len(others) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ask := func(p peer.ID) bool {
		raw, err := transport.Call(ctx, s.h, p, transport.Request{Proto: ProtoRound, Type: wire.TypeGetBatch, Body: q, Timeout: keptWindow(e), Max: wire.BatchCap(v.Lim)})
		if err == nil {
			if _, _, err = s.onBatch(pred, raw); err == nil {
				s.log.Info("missing batch relayed by a chain server", "round", r, "from", p.ShortString())
				return true
			}
		}
		s.log.Debug("relay ask", "round", r, "to", p.ShortString(), "err", err)
		return false
	}
	done := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return settled() || ctx.Err() != nil
	}
	var wg sync.WaitGroup
	for _, p := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done() {
				if ask(p) {
					cancel() // the others' open asks end with it
					return
				}
				wctx, stop := context.WithTimeout(ctx, reaskPause(e))
				_ = s.waitFor(wctx, settled)
				stop()
			}
		}()
	}
	wg.Wait()
}

// claimLack gives round r up here (a late batch is dropped: onBatch) and
// tells every chain server that this server lacks its input.
func (s *Server) claimLack(e *sepoch, r uint32) {
	v := e.final
	s.mu.Lock()
	x := e.round(r)
	if x.batchIn[0] || x.void || e.ended || e.blames.Walked(r) {
		s.mu.Unlock()
		return
	}
	x.lacked, x.lackBy = true, uint16(e.pos)
	if x.ownClaim == nil {
		x.ownClaim = s.signAttestLocked(e, wire.ClaimLack, r, 1<<uint(e.pos-1))
	}
	if x.claim == nil {
		x.claim = x.ownClaim
	}
	claim := x.ownClaim
	s.mu.Unlock()
	if s.hookRun().SilentLack(r) {
		return
	}
	if claim == nil {
		return
	}
	s.log.Warn("input batch missing after the fetch window: round passes on nothing", "round", r)
	body := claim.Marshal()
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
	ctx, cancel := context.WithTimeout(s.ctx, transport.ShortTimeout)
	defer cancel()
	for _, to := range [][]peer.ID{others, v.Chain[:1]} {
		if len(to) == 0 {
			continue
		}
		if _, err := s.each(ctx, to, transport.Request{Proto: ProtoRound, Type: wire.TypeLack, Body: body, Timeout: transport.ShortTimeout}); err != nil {
			s.log.Debug("lack notice", "round", r, "err", err)
		}
	}
}

// onLack records a chain server's claim that it lacks its input of a
// round (the void is then charged to the first part the others lacked:
// the signer's if they could not get the batch either, else the
// claimant's, charges.go). S_0 has the round signed void bodyWait later.
func (s *Server) onLack(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var c wire.Attest
	if err := c.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(c.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	q := wire.BatchRef{Epoch: c.Epoch, Round: c.Round, S: c.Signer}
	if q.S < 1 || int(q.S) >= len(v.Chain) || v.Chain[q.S] != from || q.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: lack claimed by the wrong server")
	}
	// The claim is the void's evidence against its claimant (charges.go):
	// its own signature, of its own input, in this epoch's number.
	if c.Kind != wire.ClaimLack || c.Number != v.Desc.Number || c.Lacking != 1<<uint(q.S-1) {
		return 0, nil, errors.New("node: not a lack claim of the claimant's input")
	}
	if err := proto.VerifyPeerSig(from, blame.AttestDigest(&c), c.Sig); err != nil {
		return 0, nil, err
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
		x.lackBy, x.claim = q.S, &c
	}
	// One wait a claimant and round: a claimant that resends its claim
	// (a valid copy each time) starts no more goroutines.
	first := x.voidWaits&(1<<q.S) == 0
	x.voidWaits |= 1 << q.S
	s.mu.Unlock()
	if !first {
		return wire.TypeAck, ack, nil
	}
	s.log.Warn("a server lacks its input batch", "round", q.Round, "position", q.S)
	if e.pos == 0 {
		s.hookRun().VoidWait(q.Round)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			// The servers the claimant noted have had bodyWait since
			// its note (sent at least that long before the claim) to
			// get the batch from its signer; S_0 gives them bodyWait
			// more, so that what each attests as it signs the void says
			// who lacked what (attest.go), not how far its fetch got.
			ctx, cancel := context.WithTimeout(s.ctx, bodyWait(e))
			_ = s.waitFor(ctx, func() bool { return e.ended || e.round(q.Round).void })
			cancel()
			// Not before the claim is evidence everywhere
			// (blame.Dues.VoidAfter), read again on every change: a
			// part that lands meanwhile (this server's own, an input
			// root after an early one) moves it later
			// (TestEarlyRootAfterOpenFramesS0). A round passed on
			// meanwhile is not voided.
			for s.ctx.Err() == nil {
				s.mu.Lock()
				until := e.dues().VoidAfter(e.times(q.Round), int(q.S))
				x := e.round(q.Round)
				stop := e.ended || x.void || x.pubDone || x.publishing
				s.mu.Unlock()
				d := time.Until(until)
				if stop || d <= 0 {
					break
				}
				ctx, cancel := context.WithTimeout(s.ctx, d)
				_ = s.waitFor(ctx, func() bool {
					x := e.round(q.Round)
					return e.ended || x.void || x.pubDone || x.publishing || !e.dues().VoidAfter(e.times(q.Round), int(q.S)).Equal(until)
				})
				cancel()
			}
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
