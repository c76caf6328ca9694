package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// epochFor returns a finalised epoch by id.
func (s *Server) epochFor(id [32]byte) (*sepoch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[id]
	if e == nil || e.final == nil {
		return nil, errors.New("node: unknown epoch")
	}
	return e, nil
}

// epochForWait is epochFor, waiting up to Tunables.EpochWait for the epoch:
// a primary's forwarded submissions wait for an epoch that S_0 has not
// finalised yet. Servers finalise an epoch at slightly different moments,
// and a primary's first forward can arrive before S_0 has the final
// descriptor; refusing it at once would leave round 0 unfilled until the
// round limit.
func (s *Server) epochForWait(id [32]byte) (*sepoch, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timing.EpochWait)
	defer cancel()
	var e *sepoch
	err := s.waitFor(ctx, func() bool {
		e = s.epochs[id]
		return e != nil && (e.final != nil || e.ended)
	})
	if err != nil || e == nil || e.final == nil {
		return nil, errors.New("node: unknown epoch")
	}
	return e, nil
}

// handleClient serves /riffle/1/client.
func (s *Server) handleClient(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if err := transport.Takes(ProtoClient, t); err != nil {
		return 0, nil, err
	}
	switch t {
	case wire.TypeWaitOpen, wire.TypeRegister, wire.TypeWaitList, wire.TypeDupQuery:
		// Long polls: bounded per peer and in all (internal/polls).
		pctx, release, err := s.enterPoll(ctx, from, t == wire.TypeWaitOpen)
		if err != nil {
			return 0, nil, err
		}
		defer release()
		ctx = pctx
	}
	switch t {
	case wire.TypeWaitOpen:
		var ref wire.EpochRef
		if err := ref.Unmarshal(body); err != nil {
			return 0, nil, err
		}
		var out []byte
		err := s.waitFor(ctx, func() bool {
			if s.open == nil || s.open.v.ID == ref.Epoch {
				return false
			}
			out = s.open.reg.Offer()
			return out != nil
		})
		if err != nil {
			return 0, nil, fmt.Errorf("node: no epoch opened: %w", err)
		}
		return wire.TypeSigned, out, nil
	case wire.TypeRegister:
		return s.onClientRegister(ctx, from, body)
	case wire.TypeSubmit:
		return s.onSubmit(from, body)
	case wire.TypeHandover:
		return s.onHandover(body)
	case wire.TypeDupQuery:
		return s.onDupQuery(ctx, from, body)
	case wire.TypeDupProof:
		return s.onDupProof(ctx, from, body, true)
	case wire.TypeWaitList:
		var ref wire.EpochRef
		if err := ref.Unmarshal(body); err != nil {
			return 0, nil, err
		}
		e, err := s.epochFor(ref.Epoch)
		if err != nil {
			return 0, nil, err
		}
		// Only a client that registered in the epoch here waits for its
		// lists (anyone could otherwise hold a stream to the epoch's end).
		if !e.reg.RegisteredBy(from) {
			return 0, nil, errors.New("node: request lists go to the clients registered here")
		}
		out, err := s.waitBytes(ctx, e, func() []byte {
			if x := e.rounds[ref.Round]; x != nil {
				return x.listBytes
			}
			return nil
		}, "epoch ended")
		if err != nil {
			return 0, nil, err
		}
		return wire.TypeRoundList, out, nil
	case wire.TypeIndexReq:
		return s.index.OnIndexReq(ctx, from, body)
	case wire.TypeWindowReq:
		return s.onWindowReq(ctx, from, body)
	case wire.TypeStateReq:
		return s.onStateReq(ctx, from)
	case wire.TypeReceiptSet:
		return s.onReceiptSet(from, body)
	}
	return 0, nil, transport.Unhandled(ProtoClient, t)
}

func (s *Server) onClientRegister(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var cr wire.ClientRegister
	if err := cr.Unmarshal(body, proto.GenericLimits()); err != nil {
		return 0, nil, err
	}
	r := cr.Reg
	s.mu.Lock()
	e := s.open
	s.mu.Unlock()
	if e == nil || e.v.ID != r.Epoch {
		return 0, nil, errors.New("node: epoch not open for registration here")
	}
	if s.hookKeepOut(from, r.Epoch) {
		return 0, nil, errors.New("node: registration refused")
	}
	// The long-term key (§8 "After a blame"): its signature and its
	// exclusion are checked before the registration's costly proofs.
	if err := proto.VerifyLongTerm(cr.LTKey, r.Epoch, r.RegKey, cr.LTSig); err != nil {
		return 0, nil, err
	}
	if until, ok := s.keys.Excluded(cr.LTKey, e.v.Desc.Number); ok {
		return 0, nil, fmt.Errorf("node: this client's long-term key is excluded up to epoch %d: a blame named it", until)
	}
	// (issue 25 point 8) the intake's bounds before the proofs: the
	// registrations held, and a first-time key's address range.
	rng := s.addrRange(from)
	returning := false
	if seen, ok := s.keys.Seen(cr.LTKey); ok {
		returning = seen.Dry == 0
	}
	n := int(e.v.Desc.Params.MaxClients)
	if err := e.reg.Room(n, rng, returning); err != nil {
		return 0, nil, err
	}
	if _, err := proto.CheckRegister(e.v, &r); err != nil {
		return 0, nil, err
	}
	// Signed as forwarded (§8): a registration whose proofs fail would be
	// evidence against this primary.
	fwd := wire.Forwarded{Primary: uint16(e.pos), Reg: r}
	sig, err := proto.Sign(s.priv, proto.ForwardDigest(&fwd))
	if err != nil {
		return 0, nil, err
	}
	fwd.Sig = sig
	s.mu.Lock()
	if err := e.reg.Room(n, rng, returning); err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	if err := s.clientRefusal(from, e.v.Desc.Number); err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	if err := s.dupAdmit(e, from); err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	if err := e.reg.Take(n, r, from, fwd.Sig, intake.LT{Key: cr.LTKey, Sig: cr.LTSig}, rng, returning); err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	s.mu.Unlock()
	// (issue 25 point 8) the primary orders its registrations before it
	// forwards them: until its registration deadline it only holds them;
	// then the first n_max of its admission order go on and the rest are
	// refused, so that fresh keys at the window's open cannot push
	// returning clients out.
	if err := s.awaitOrder(ctx, e, r.RegKey); err != nil {
		return 0, nil, err
	}
	// (v3) Forward to every chain server (§3), without the long-term
	// key, and keep their receipts for the client (receipts.go); the
	// leader also collects every primary's list at the close, so a lost
	// forward costs nothing.
	s.fanOut(ctx, e, &fwd)
	out, err := s.waitBytes(ctx, e, e.reg.FinalBytes, "epoch did not start")
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeSigned, out, nil
}

// waitBytes waits until get (called under s.mu) returns bytes, or e ends,
// which is an error saying what did not happen and why.
func (s *Server) waitBytes(ctx context.Context, e *sepoch, get func() []byte, what string) ([]byte, error) {
	var out []byte
	if err := s.waitFor(ctx, func() bool {
		out = get()
		return out != nil || e.ended || e.dup.Started()
	}); err != nil {
		return nil, err
	}
	if out == nil && !e.ended {
		return nil, fmt.Errorf("node: %s: setup aborted on a repeated share", what)
	}
	if out == nil {
		return nil, fmt.Errorf("node: %s: %s", what, e.reason)
	}
	return out, nil
}

// checkSubmission decodes one signed onion of a client of this primary and
// checks it before anything is kept (§5.1): the slot is served here, the
// round is within the epoch, the onion has the epoch's size and the slot's
// registration key signed it. what names the message in errors.
func (s *Server) checkSubmission(body []byte, what string) (wire.Submit, *sepoch, [32]byte, error) {
	var sub wire.Submit
	if err := sub.Unmarshal(body, proto.GenericLimits()); err != nil {
		return sub, nil, [32]byte{}, err
	}
	e, err := s.epochFor(sub.Epoch)
	if err != nil {
		return sub, nil, [32]byte{}, err
	}
	digest, err := intake.CheckSubmission(&sub, e.final.Desc, e.pos, len(e.final.Chain), what)
	if err != nil {
		return sub, nil, [32]byte{}, err
	}
	return sub, e, digest, nil
}

// onSubmit takes one onion from a client of this primary (§5.1, §5.4).
func (s *Server) onSubmit(from peer.ID, body []byte) (wire.Type, []byte, error) {
	sub, e, digest, err := s.checkSubmission(body, "submission")
	if err != nil {
		return 0, nil, err
	}
	s.hookSubmit(sub.Epoch, sub.Round, sub.Slot)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended {
		return 0, nil, fmt.Errorf("node: epoch ended: %s", e.reason)
	}
	if err := e.admit(sub.Round); err != nil {
		return 0, nil, err
	}
	return s.takeSubmitLocked(e, sub, body, digest)
}

// takeSubmitLocked files a checked submission of one of this primary's
// clients for an admitted round: S_0 keeps it for its round driver, any
// other primary forwards its clients' onions of the round once it holds
// all of them. body is the frame sub's onion aliases. Call with s.mu held.
func (s *Server) takeSubmitLocked(e *sepoch, sub wire.Submit, body []byte, digest [32]byte) (wire.Type, []byte, error) {
	x := e.round(sub.Round)
	if e.isDead(sub.Slot) {
		// deadslot.go: a slot a blame named takes nothing more.
		return 0, nil, errors.New("node: this slot is dead for the rest of the epoch")
	}
	if old, ok := x.subs[sub.Slot]; ok {
		if !bytes.Equal(old.Onion, sub.Onion) {
			// §5.1: two different onions signed for one (round, slot)
			// is evidence against the client: named, its slot dies
			// (deadslot.go), and the first onion stays.
			s.noteDouble(e, &old, &sub)
			return 0, nil, errors.New("node: a different onion was already submitted for this round")
		}
		if body != nil {
			s.pool.Put(body) // a resend: nothing refers to it
		}
		return wire.TypeAck, ack, nil
	}
	x.subs[sub.Slot] = sub
	if body != nil {
		x.bodies = append(x.bodies, body)
	}
	if e.pos == 0 {
		x.digests[sub.Slot] = digest
		// S_0 holds its own clients' onions where the other primaries'
		// batches land: wake its round driver.
		s.notify()
		return wire.TypeAck, ack, nil
	}
	s.forwardIfReady(e, sub.Round)
	return wire.TypeAck, ack, nil
}

func (s *Server) forwardSubs(e *sepoch, batch *wire.SubmitBatch) {
	if s.hookHoldSubs(batch.Epoch, batch.Round) {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
	defer cancel()
	if _, err := transport.Call(ctx, s.h, e.final.Chain[0], transport.Request{Proto: ProtoRound, Type: wire.TypeSubmitBatch, Segments: batch.Segments(), Timeout: transport.BulkTimeout}); err != nil {
		s.log.Warn("forward submissions", "round", batch.Round, "err", err)
	}
}

// takeSubs is the leader's intake of a primary's submissions.
func (s *Server) takeSubs(from peer.ID, body []byte, batch *wire.SubmitBatch) error {
	e, err := s.epochForWait(batch.Epoch)
	if err != nil {
		return err
	}
	if e.pos != 0 {
		return errors.New("node: submissions sent to a server that is not S_0")
	}
	digests, err := intake.CheckBatch(batch, e.final.Desc, e.final.Chain, from)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := e.admit(batch.Round); err != nil {
		return err
	}
	x := e.round(batch.Round)
	for i, sub := range batch.Subs {
		if e.isDead(sub.Slot) {
			continue // deadslot.go: its filler is mixed instead
		}
		if old, ok := x.subs[sub.Slot]; ok && !bytes.Equal(old.Onion, sub.Onion) {
			// The client is named and its slot dies; the batch's
			// other onions are taken.
			s.noteDouble(e, &old, &sub)
			continue
		}
		x.subs[sub.Slot], x.digests[sub.Slot] = sub, digests[i]
	}
	x.bodies = append(x.bodies, body)
	s.notify()
	return nil
}

// awaitOrder holds a registration of e until this primary's registration
// deadline, fixes the admission order, and says whether the registration
// is in it.
func (s *Server) awaitOrder(ctx context.Context, e *sepoch, key [32]byte) error {
	if wait := time.Until(e.reg.Deadline()); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended {
		return fmt.Errorf("node: epoch did not start: %s", e.reason)
	}
	fixOrder(e, &s.keys, s.rand, s.log)
	if !e.reg.Ordered(key) {
		return errors.New("node: epoch full: this registration is past the admission order's n_max")
	}
	return nil
}
