package evidence

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// PreFinal is an epoch's aborts for a missing publication or list that
// came before this server's final descriptor, one a signer and kind (at
// most 2m), taken when it comes (Service.TakePreFinal): no round ran here
// yet, and an honest server signs such an abort only once its rounds ran.
// Taken at once, a corrupt server's abort raced the final descriptor: the
// servers it ended refused the descriptor, never attested a round, and
// the abort, judged under the final certificate, charged nobody for good
// (TestAbortRacesFinal; the rev42a review's F2). Held, it ends nothing
// until the rounds could run, and its round is attested then. Under the
// server's lock.
type PreFinal struct {
	m map[preFinalKey]preFinalAbort
}

type preFinalKey struct {
	signer peer.ID
	kind   uint8
}

type preFinalAbort struct {
	from peer.ID
	a    wire.Abort
	ev   *wire.Charge
}

// hold keeps a; false if one of its signer and kind is held already.
func (p *PreFinal) hold(from peer.ID, a wire.Abort, ev *wire.Charge) bool {
	k := preFinalKey{peer.ID(a.Signer), a.Kind}
	if _, ok := p.m[k]; ok {
		return false
	}
	if p.m == nil {
		p.m = map[preFinalKey]preFinalAbort{}
	}
	p.m[k] = preFinalAbort{from: from, a: a, ev: ev}
	return true
}

// holdPreFinal holds an abort for the final descriptor (PreFinal) and
// logs it now all the same, so that every server holds the same
// evidence: judged under no final certificate it charges nobody yet
// (blame.ChargeOf), and under the final one once it comes (Rejudge).
// Call with the server's lock held.
func (s *Service) holdPreFinal(ep *Ep, from peer.ID, a wire.Abort, ev *wire.Charge) {
	if !ep.PreFinal.hold(from, a, ev) {
		return
	}
	logged := &wire.Charge{Kind: wire.EvAbort, Number: ep.V.Desc.Number, Item: a.Marshal()}
	if ev != nil {
		// A copy: the held one gets this server's attestation later,
		// while the log may still read this one.
		logged = &wire.Charge{Kind: ev.Kind, Number: ev.Number, Item: ev.Item, Attests: append([]wire.Attest(nil), ev.Attests...)}
	}
	s.NoteCharge(ep, logged, nil, "")
}

// TakePreFinal takes the aborts held for ep's final descriptor, now come.
// Call with the server's lock held.
func (s *Service) TakePreFinal(ep *Ep) {
	held := ep.PreFinal.m
	ep.PreFinal.m = nil
	for _, h := range held {
		if _, _, err := s.Take(ep, h.from, &h.a, h.ev); err != nil {
			s.Log.Debug("held abort", "err", err)
		}
	}
}
