package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

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
		pctx, release, err := s.peers.EnterPoll(ctx, from, t == wire.TypeWaitOpen)
		if err != nil {
			return 0, nil, err
		}
		defer release()
		ctx = pctx
	}
	switch t {
	case wire.TypeWaitOpen:
		return s.regs.OnWaitOpen(ctx, body)
	case wire.TypeRegister:
		return s.regs.OnClientRegister(ctx, from, body)
	case wire.TypeSubmit:
		return s.submits.onSubmit(from, body)
	case wire.TypeHandover:
		return s.submits.onHandover(body)
	case wire.TypeDupQuery:
		return s.dups.OnQuery(ctx, from, body)
	case wire.TypeDupProof:
		return s.dups.OnProof(ctx, from, body, true)
	case wire.TypeWaitList:
		return s.regs.OnWaitList(ctx, from, body)
	case wire.TypeIndexReq:
		return s.ix.Pages.OnIndexReq(ctx, from, body)
	case wire.TypeWindowReq:
		return s.wins.OnClientReq(ctx, from, body)
	case wire.TypeStateReq:
		return s.onStateReq(ctx, from)
	case wire.TypeReceiptSet:
		return s.regs.OnReceiptSet(from, body)
	case wire.TypeShowReceipt:
		return s.onShowReceipt(body)
	}
	return 0, nil, transport.Unhandled(ProtoClient, t)
}

// submissions is the intake of onions (§5.1, §5.4): a client's, checked
// and kept by its primary (onSubmit, onHandover), and the primaries'
// batches of them at S_0 (takeSubs). The rounds' state is the epoch's
// (sepoch), under mu, the server's lock; the rest of the server is
// reached through host.
type submissions struct {
	host  submitHost
	mu    *sync.Mutex
	ctx   context.Context
	h     transport.Host
	log   *slog.Logger
	pool  *transport.BufPool
	hooks hookSrc
}

// submitHost is what the intake takes from the rest of the server.
type submitHost interface {
	epochFor(id [32]byte) (*sepoch, error)
	epochForWait(id [32]byte) (*sepoch, error)
	// Under mu.
	notify()
	receiptLocked(e *sepoch, sub *wire.Submit, digest [32]byte) (wire.Type, []byte, error)
	noteDouble(e *sepoch, a, b *wire.Submit)
	forwardIfReady(e *sepoch, r uint32)
}

func newSubmissions(s *Server) submissions {
	return submissions{host: s, mu: &s.mu, ctx: s.ctx, h: s.h, log: s.log, pool: &s.pool, hooks: newHookSrc(s)}
}

// forwardSubs and releaseHandoverLocked are the intake's, for the round
// blame's files (held.go, deadslot.go) and the publication (publish.go).
func (s *Server) forwardSubs(e *sepoch, batch *wire.SubmitBatch) { s.submits.forwardSubs(e, batch) }
func (s *Server) releaseHandoverLocked(e *sepoch)                { s.submits.releaseHandoverLocked(e) }

// checkSubmission decodes one signed onion of a client of this primary and
// checks it before anything is kept (§5.1): the slot is served here, the
// round is within the epoch, the onion has the epoch's size and the slot's
// registration key signed it. what names the message in errors.
func (in *submissions) checkSubmission(body []byte, what string) (wire.Submit, *sepoch, [32]byte, error) {
	var sub wire.Submit
	if err := sub.Unmarshal(body, proto.GenericLimits()); err != nil {
		return sub, nil, [32]byte{}, err
	}
	e, err := in.host.epochFor(sub.Epoch)
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
func (in *submissions) onSubmit(from peer.ID, body []byte) (wire.Type, []byte, error) {
	sub, e, digest, err := in.checkSubmission(body, "submission")
	if err != nil {
		return 0, nil, err
	}
	in.hooks.cfg().Submit(sub.Epoch, sub.Round, sub.Slot)
	in.mu.Lock()
	defer in.mu.Unlock()
	if e.ended {
		return 0, nil, fmt.Errorf("node: epoch ended: %s", e.reason)
	}
	if err := e.admit(sub.Round); err != nil {
		return 0, nil, err
	}
	if e.signedDry(sub.Round, sub.Slot) {
		// held.go: signed dry, the slot takes no onion of the round.
		return 0, nil, fmt.Errorf("node: slot %d was signed dry for round %d", sub.Slot, sub.Round)
	}
	if _, _, err := in.takeSubmitLocked(e, sub, body, digest); err != nil {
		return 0, nil, err
	}
	// §5.4: every taken onion, a resend too, gets the signed receipt.
	return in.host.receiptLocked(e, &sub, digest)
}

// takeSubmitLocked files a checked submission of one of this primary's
// clients for an admitted round: S_0 keeps it for its round driver, any
// other primary forwards its clients' onions of the round once it holds
// all of them. body is the frame sub's onion aliases. Call with s.mu held.
func (in *submissions) takeSubmitLocked(e *sepoch, sub wire.Submit, body []byte, digest [32]byte) (wire.Type, []byte, error) {
	x := e.round(sub.Round)
	if e.outsideRoot(sub.Round, sub.Slot) {
		// forward.go: its forward root of the round is signed without
		// the slot, which takes no onion of it from then on.
		return 0, nil, fmt.Errorf("node: round %d was forwarded without slot %d", sub.Round, sub.Slot)
	}
	if e.isDead(sub.Slot) {
		// deadslot.go: a slot a blame named takes nothing more.
		return 0, nil, errors.New("node: this slot is dead for the rest of the epoch")
	}
	if old, ok := x.subs[sub.Slot]; ok {
		if !bytes.Equal(old.Onion, sub.Onion) {
			// §5.1: two different onions signed for one (round, slot)
			// is evidence against the client: named, its slot dies
			// (deadslot.go), and the first onion stays.
			in.host.noteDouble(e, &old, &sub)
			return 0, nil, errors.New("node: a different onion was already submitted for this round")
		}
		if body != nil {
			in.pool.Put(body) // a resend: nothing refers to it
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
		in.host.notify()
		return wire.TypeAck, ack, nil
	}
	in.host.forwardIfReady(e, sub.Round)
	return wire.TypeAck, ack, nil
}

func (in *submissions) forwardSubs(e *sepoch, batch *wire.SubmitBatch) {
	if in.hooks.run().HoldSubs(batch.Epoch, batch.Round) {
		return
	}
	ctx, cancel := context.WithTimeout(in.ctx, transport.BulkTimeout)
	defer cancel()
	if _, err := transport.Call(ctx, in.h, e.final.Chain[0], transport.Request{Proto: ProtoRound, Type: wire.TypeSubmitBatch, Segments: batch.Segments(), Timeout: transport.BulkTimeout}); err != nil {
		in.log.Warn("forward submissions", "round", batch.Round, "err", err)
	}
}

// takeSubs is the leader's intake of a primary's submissions.
func (in *submissions) takeSubs(from peer.ID, body []byte, batch *wire.SubmitBatch) error {
	e, err := in.host.epochForWait(batch.Epoch)
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
	if in.hooks.run().DropSubs(batch.Epoch, batch.Round) {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
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
			in.host.noteDouble(e, &old, &sub)
			continue
		}
		x.subs[sub.Slot], x.digests[sub.Slot] = sub, digests[i]
	}
	x.bodies = append(x.bodies, body)
	in.host.notify()
	return nil
}
