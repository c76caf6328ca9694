package evidence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The refusal budget of §3: a server may end an epoch on grounds only it
// can see (a refusal, free text) without being named, but at most once
// per m epochs; a second such abort within m epoch numbers of the first
// leaves it out of the next m chains (no blame, no probation). Aborts are
// signed by the server that ends the epoch and relayed once by every
// server that gets one, so that every honest server charges the same
// signer; the counts are kept in the data directory (chargelog.File), so
// that a restart does not reset them.
//
// A count is taken back only for a public cause the log holds, the same
// at every server whenever it came (chargelog.Log.Cause): a blame record
// of its epoch, or a departure of one of its servers that the majority
// attests. Config.AbortSettle is how long a server that ended an epoch
// waits before it signs its abort: if another server's abort comes
// meanwhile, its own fault was that one's consequence (a peer that
// already ended the epoch refuses its requests) and it sends nothing, so
// that it is not charged for another's refusal. Its own epoch ends at
// once.

// SignAbort is signer's abort of the epoch of v (id and number), of kind
// and round, its reason cut to wire.MaxReason.
func SignAbort(priv crypto.PrivKey, signer peer.ID, v *proto.View, kind uint8, round uint32, reason string) (*wire.Abort, error) {
	a := &wire.Abort{Epoch: v.ID, Number: v.Desc.Number, Round: round, Kind: kind, Signer: []byte(signer), Reason: []byte(reason)}
	if len(a.Reason) > wire.MaxReason {
		a.Reason = a.Reason[:wire.MaxReason]
	}
	sig, err := proto.Sign(priv, proto.AbortDigest(a))
	if err != nil {
		return nil, err
	}
	a.Sig = sig
	return a, nil
}

// CheckAbort checks an abort of the epoch of v: signed by a server of its
// chain, of its number (a coordination abort may precede it), and the
// signature.
func CheckAbort(v *proto.View, a *wire.Abort) error {
	signer := peer.ID(a.Signer)
	if !proto.InChain(v.Chain, signer) {
		return errors.New("node: abort signed outside the chain")
	}
	if a.Kind != wire.AbortCoord && a.Number != v.Desc.Number {
		return fmt.Errorf("node: abort of epoch number %d, not %d", a.Number, v.Desc.Number)
	}
	return proto.VerifyPeerSig(signer, proto.AbortDigest(a), a.Sig)
}

// BroadcastAbort tells every other server of ep's chain that ep ended
// here (§3: a failure ends the epoch for everyone; without the notice the
// others' clients would wait for rounds that never come), with a signed
// abort of kind and round, after AbortSettle and unless another server's
// abort came first. Call with the server's lock held.
func (s *Service) BroadcastAbort(ep *Ep, kind uint8, round uint32, reason string) {
	v := ep.V
	to := others(v.Chain, s.Self)
	s.h.Go(func() {
		select {
		case <-s.Ctx.Done():
			return
		case <-time.After(s.AbortSettle):
		}
		var body []byte
		s.h.Locked(func() {
			if !s.Ref.AbortedByOther(v.ID, s.Self) {
				body = s.SignOwn(s.h.Now(ep), kind, round, reason)
			}
		})
		if body == nil {
			return
		}
		ctx, cancel := context.WithTimeout(s.Ctx, transport.ShortTimeout)
		defer cancel()
		_, _ = s.h.Each(ctx, to, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeAbort, Body: body, Timeout: transport.ShortTimeout})
	})
}

// SignOwn returns this server's signed abort of ep and notes it here as
// any other server will (nil if signing failed). Call with the server's
// lock held.
func (s *Service) SignOwn(ep *Ep, kind uint8, round uint32, reason string) []byte {
	a, err := SignAbort(s.Priv, s.Self, ep.V, kind, round, reason)
	if err != nil {
		s.Log.Error("abort unsigned", "err", err)
		return nil
	}
	s.Note(ep, a, s.Self, nil)
	return a.Marshal()
}

// CoordAbort is the signed coordination abort of the leader for epoch id
// (an epoch it gives up before the final descriptor): charged to nobody.
func (s *Service) CoordAbort(id [32]byte, reason string) []byte {
	var body []byte
	held := false
	s.h.Locked(func() {
		if ep := s.h.Epoch(id); ep != nil {
			held, body = true, s.SignOwn(ep, wire.AbortCoord, 0, reason)
		}
	})
	if held {
		return body
	}
	a := &wire.Abort{Epoch: id, Kind: wire.AbortCoord, Signer: []byte(s.Self), Reason: []byte(reason)}
	sig, err := proto.Sign(s.Priv, proto.AbortDigest(a))
	if err != nil {
		return nil
	}
	a.Sig = sig
	return a.Marshal()
}

// Take handles an abort of held epoch ep from a server of its chain,
// bare (ev nil: TypeAbort) or as evidence with attestations (TypeCharge).
// Call with the server's lock held.
func (s *Service) Take(ep *Ep, from peer.ID, ap *wire.Abort, ev *wire.Charge) (wire.Type, []byte, error) {
	a := *ap
	body := a.Marshal()
	signer := peer.ID(a.Signer)
	if err := CheckAbort(ep.V, &a); err != nil {
		return 0, nil, err
	}
	if (a.Kind == wire.AbortNoPub || a.Kind == wire.AbortNoList) && ep.Final == nil {
		s.holdPreFinal(ep, from, a, ev)
		return wire.TypeAck, ack, nil
	}
	// Any server of the chain may end the epoch: a fault anywhere stops
	// it for all (within the refusal budget when nobody is named). Ended
	// first, so that the round this server attests of an abort for a
	// missing publication stopped here: a round not open or not yet due
	// is attested with nothing lacking, and the abort's charge does not
	// wait for an answer that never comes (TestEarlyNoPubCharged).
	s.h.EndQuiet(ep, "ended by "+signer.ShortString()+": "+string(a.Reason))
	if s.Note(ep, &a, signer, ev) && signer != s.Self && ev == nil {
		// Relayed once to the rest of the chain, so that one sent to a
		// few reaches all.
		if to := others(ep.V.Chain, s.Self, from, signer); len(to) > 0 {
			s.h.NotifyAll(to, wire.TypeAbort, body)
		}
	}
	return wire.TypeAck, ack, nil
}

// Note handles an abort the first time it is seen here and reports
// whether it was new. A fault abort counts against its signer at once; a
// coordination abort by the leader before the final descriptor counts
// against nobody. A count is taken back for a public cause in the log
// (chargelog.Log.Cause). Call with the server's lock held.
func (s *Service) Note(ep *Ep, a *wire.Abort, signer peer.ID, ev *wire.Charge) bool {
	v := ep.V
	// The charge is blame.ChargeOf the abort and its attestations; of
	// an abort that claims a missing publication, this server adds its
	// own whenever it takes it, the others theirs: a signer's second
	// abort of the epoch (one of an unfilled round first) got none
	// here, and its charge waited for good (TestEarlyNoPubCharged).
	var own *wire.Attest
	switch a.Kind {
	case wire.AbortDown:
		// Its own "down" now, or once its probe fails (AttestDown).
		if ep.Down.noteAbort(a, len(v.Chain)) {
			own = s.DownAttest(ep, int(a.Round))
		}
	case wire.AbortNoPub:
		own = s.h.PubAttest(ep, a.Round)
	}
	if !s.Ref.FirstSight(v.ID, v.Desc.Number, signer) {
		if ev == nil && own != nil && a.Kind == wire.AbortNoPub {
			ev = &wire.Charge{Kind: wire.EvAbort, Number: v.Desc.Number, Item: a.Marshal()}
		}
		if ev != nil {
			// The same abort with attestations: they may be news.
			s.NoteCharge(ep, ev, own, "")
		}
		return false
	}
	// An opened epoch that ends before its final descriptor is certified
	// by its open signatures and this abort.
	s.h.CertifyAbort(ep, a)
	if ev == nil {
		ev = &wire.Charge{Kind: wire.EvAbort, Number: v.Desc.Number, Item: a.Marshal()}
	}
	s.NoteCharge(ep, ev, own, "")
	return true
}

// SendBacked signs this server's abort of ep of kind and round, backed by
// the chain's attestations, notes it here and sends it to the rest of the
// chain as evidence (TypeCharge); false if signing failed. Call with the
// server's lock held.
func (s *Service) SendBacked(ep *Ep, kind uint8, round uint32, reason string, attests []wire.Attest) bool {
	a, err := SignAbort(s.Priv, s.Self, ep.V, kind, round, reason)
	if err != nil {
		return false
	}
	ev := &wire.Charge{Kind: wire.EvAbort, Number: a.Number, Item: a.Marshal(), Attests: attests}
	s.Note(ep, a, s.Self, ev)
	s.h.NotifyAll(others(ep.V.Chain, s.Self), wire.TypeCharge, ev.Marshal())
	return true
}
