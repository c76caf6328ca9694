package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The refusal budget of docs/protocol.md §3: a server may end an epoch on
// grounds only it can see (a refusal, free text) without being named, but
// at most once per m epochs; a second such abort within m epoch numbers
// of the first leaves it out of the next m chains (no blame, no
// probation). Aborts are signed by the server that ends the epoch and
// relayed once by every server that gets one, so that every honest server
// charges the same signer; the counts are kept in the data directory, so
// that a restart does not reset them.

// RefusalFile holds the counted aborts in a data directory (JSON).
const RefusalFile = chargelog.File

// A count is taken back only for a public cause the log holds, the same
// at every server whenever it came (chargelog.Log.Cause): a blame record
// of its epoch, or a departure of one of its servers that the majority
// attests (serverdown.go). Tunables.AbortSettle is how long a server that
// ended an epoch waits before it signs its abort: if another server's
// abort comes meanwhile, its own fault was that one's consequence (a peer
// that already ended the epoch refuses its requests) and it sends
// nothing, so that it is not charged for another's refusal. Its own
// epoch ends at once. The log itself, the counts and the aborts seen are
// package internal/chargelog's (its own lock).

// broadcastAbort tells every other server of e's chain that e ended here
// (§3: a failure ends the epoch for everyone; without the notice the
// others' clients would wait for rounds that never come), with a signed
// abort, after AbortSettle and unless another server's abort came first.
// Call with s.mu held.
func (s *Server) broadcastAbort(e *sepoch, reason string) {
	s.broadcastAbortKind(e, wire.AbortFault, 0, reason)
}

// endUnfilled ends e when round r could not be filled (§5.4). If the
// publication of an earlier round is what it waits for, the abort says so
// (AbortNoPub), so that it is charged to the last server when the others
// lack it too (or to a server that claimed it lacked its input of the
// round, lack.go). Call with s.mu held.
func (s *Server) endUnfilled(e *sepoch, r uint32) {
	if r >= mixDepth {
		if x := e.rounds[r-mixDepth]; x == nil || !x.pubDone {
			s.endNoPub(e, r-mixDepth, fmt.Sprintf("round %d: no publication of round %d", r, r-mixDepth))
			return
		}
	}
	// A slot without its onion: charged to no server (wire.AbortUnfilled).
	reason := fmt.Sprintf("round %d not filled", r)
	s.endQuiet(e, reason)
	s.broadcastAbortKind(e, wire.AbortUnfilled, r, reason)
}

// endNoPub ends e for the missing publication of round q with an abort
// that says so (AbortNoPub). Call with s.mu held.
func (s *Server) endNoPub(e *sepoch, q uint32, reason string) {
	s.endQuiet(e, reason)
	// Attested now, with the round's relay notes: the end drops them
	// (dropEnded) before the abort is signed, AbortSettle later, and a
	// batch that nobody could get from its signer was then attested
	// held, its honest receiver charged (TestStaleEndKeepsNotes).
	if e.final != nil && e.admit(q) == nil {
		s.roundAttestLocked(e, q)
	}
	s.broadcastAbortKind(e, wire.AbortNoPub, q, reason)
}

// broadcastAbortKind is broadcastAbort with an abort kind and round.
func (s *Server) broadcastAbortKind(e *sepoch, kind uint8, round uint32, reason string) {
	var others []peer.ID
	for _, p := range e.v.Chain {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.cfg.Timing.AbortSettle):
		}
		s.mu.Lock()
		var body []byte
		if !s.ref.AbortedByOther(e.v.ID, s.h.ID()) {
			body = s.signAbortLocked(e, kind, round, reason)
		}
		s.mu.Unlock()
		if body == nil {
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, transport.ShortTimeout)
		defer cancel()
		_, _ = s.each(ctx, others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeAbort, Body: body, Timeout: transport.ShortTimeout})
	}()
}

// signAbortLocked returns this server's signed abort of e and notes it
// here as any other server will (nil if signing failed). Call with s.mu
// held.
func (s *Server) signAbortLocked(e *sepoch, kind uint8, round uint32, reason string) []byte {
	a := &wire.Abort{Epoch: e.v.ID, Number: e.v.Desc.Number, Round: round, Kind: kind, Signer: []byte(s.h.ID()), Reason: []byte(reason)}
	if len(a.Reason) > wire.MaxReason {
		a.Reason = a.Reason[:wire.MaxReason]
	}
	sig, err := proto.Sign(s.priv, proto.AbortDigest(a))
	if err != nil {
		s.log.Error("abort unsigned", "err", err)
		return nil
	}
	a.Sig = sig
	s.noteAbortLocked(e, a, s.h.ID(), nil)
	return a.Marshal()
}

// abortBody is the signed coordination abort of the leader for epoch id
// (abortAll): charged to nobody, and only before the final descriptor.
func (s *Server) abortBody(id [32]byte, reason string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.epochs[id]; e != nil && e.v != nil {
		return s.signAbortLocked(e, wire.AbortCoord, 0, reason)
	}
	a := &wire.Abort{Epoch: id, Kind: wire.AbortCoord, Signer: []byte(s.h.ID()), Reason: []byte(reason)}
	sig, err := proto.Sign(s.priv, proto.AbortDigest(a))
	if err != nil {
		return nil
	}
	a.Sig = sig
	return a.Marshal()
}

// onAbort handles an abort sent or relayed by a server of the epoch's
// chain: checked (sender, signer, number, signature), counted, relayed
// once to the rest of the chain, and the epoch ended.
func (s *Server) onAbort(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var a wire.Abort
	if err := a.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[a.Epoch]
	if e == nil || !proto.InChain(e.v.Chain, from) {
		// Not an epoch of this server's (or no longer held), or handed
		// on from outside its chain: the evidence of a budget.
		return s.evidenceLocked(from, &a)
	}
	return s.takeAbortLocked(e, from, &a, nil)
}

// takeAbortLocked handles an abort of held epoch e from a server of its
// chain, bare (ev nil: TypeAbort) or as evidence with attestations
// (TypeCharge). Call with s.mu held.
func (s *Server) takeAbortLocked(e *sepoch, from peer.ID, ap *wire.Abort, ev *wire.Charge) (wire.Type, []byte, error) {
	a := *ap
	body := a.Marshal()
	signer := peer.ID(a.Signer)
	if !proto.InChain(e.v.Chain, signer) {
		return 0, nil, errors.New("node: abort signed outside the chain")
	}
	if a.Kind != wire.AbortCoord && a.Number != e.v.Desc.Number {
		return 0, nil, fmt.Errorf("node: abort of epoch number %d, not %d", a.Number, e.v.Desc.Number)
	}
	if err := proto.VerifyPeerSig(signer, proto.AbortDigest(&a), a.Sig); err != nil {
		return 0, nil, err
	}
	if (a.Kind == wire.AbortNoPub || a.Kind == wire.AbortNoList) && e.final == nil {
		s.holdPreFinalLocked(e, from, a, ev)
		return wire.TypeAck, ack, nil
	}
	// Any server of the chain may end the epoch: a fault anywhere stops
	// it for all (within the refusal budget when nobody is named). Ended
	// first, so that the round this server attests of an abort for a
	// missing publication stopped here: a round not open or not yet due
	// is attested with nothing lacking, and the abort's charge does not
	// wait for an answer that never comes (TestEarlyNoPubCharged).
	s.endQuiet(e, "ended by "+signer.ShortString()+": "+string(a.Reason))
	if s.noteAbortLocked(e, &a, signer, ev) && signer != s.h.ID() && ev == nil {
		s.relayAbort(e, body, from, signer)
	}
	return wire.TypeAck, ack, nil
}

// preFinalKey and preFinalAbort: an abort held until the final
// descriptor (holdPreFinalLocked).
type preFinalKey struct {
	signer peer.ID
	kind   uint8
}

type preFinalAbort struct {
	from peer.ID
	a    wire.Abort
	ev   *wire.Charge
}

// holdPreFinalLocked keeps an abort for a missing publication or list
// that came before this server's final descriptor, and takePreFinalLocked
// takes it when the descriptor comes: no round ran here yet, and an honest
// server signs such an abort only once its rounds ran. Taken at once, a
// corrupt server's abort raced the final descriptor: the servers it ended
// refused the descriptor, never attested a round, and the abort, judged
// under the final certificate, charged nobody for good (TestAbortRacesFinal;
// the rev42a review's F2). Held, it ends nothing until the rounds could
// run, and its round is attested then. One a signer and kind, at most 2m.
// Call with s.mu held.
func (s *Server) holdPreFinalLocked(e *sepoch, from peer.ID, a wire.Abort, ev *wire.Charge) {
	k := preFinalKey{peer.ID(a.Signer), a.Kind}
	if _, ok := e.preFinal[k]; ok {
		return
	}
	if e.preFinal == nil {
		e.preFinal = map[preFinalKey]preFinalAbort{}
	}
	e.preFinal[k] = preFinalAbort{from: from, a: a, ev: ev}
	// Logged now all the same, so that every server holds the same
	// evidence: judged under no final certificate it charges nobody yet
	// (blame.ChargeOf), and under the final one once it comes (Rejudge).
	logged := &wire.Charge{Kind: wire.EvAbort, Number: e.v.Desc.Number, Item: a.Marshal()}
	if ev != nil {
		// A copy: the held one gets this server's attestation later,
		// while the log may still read this one.
		logged = &wire.Charge{Kind: ev.Kind, Number: ev.Number, Item: ev.Item, Attests: append([]wire.Attest(nil), ev.Attests...)}
	}
	s.noteChargeLocked(e, logged, nil, "")
}

// takePreFinalLocked takes the aborts held for e's final descriptor, now
// come (holdPreFinalLocked). Call with s.mu held.
func (s *Server) takePreFinalLocked(e *sepoch) {
	held := e.preFinal
	e.preFinal = nil
	for _, h := range held {
		if _, _, err := s.takeAbortLocked(e, h.from, &h.a, h.ev); err != nil {
			s.log.Debug("held abort", "err", err)
		}
	}
}

// relayAbort sends a signed abort on to every server of the chain but this
// one, the sender and the signer, so that one sent to a few reaches all.
// Call with s.mu held.
func (s *Server) relayAbort(e *sepoch, body []byte, from, signer peer.ID) {
	var to []peer.ID
	for _, p := range e.v.Chain {
		if p != s.h.ID() && p != from && p != signer {
			to = append(to, p)
		}
	}
	if len(to) == 0 {
		return
	}
	s.notifyAll(to, wire.TypeAbort, body)
}

// noteAbortLocked handles an abort the first time it is seen here and
// reports whether it was new. A fault abort counts against its signer at
// once; a coordination abort by the leader before the final descriptor
// counts against nobody. A count is taken back for a public cause in the
// log (chargelog.Log.Cause). Call with s.mu held.
func (s *Server) noteAbortLocked(e *sepoch, a *wire.Abort, signer peer.ID, ev *wire.Charge) bool {
	var down *wire.Attest
	if a.Kind == wire.AbortDown && e.noteDownAbort(a) {
		// Its own "down" now, or once its probe fails (serverdown.go).
		down = s.downAttestLocked(e, int(a.Round))
	}
	// The charge is blame.ChargeOf the abort and its attestations (charges.go);
	// of an abort that claims a missing publication, this server
	// adds its own whenever it takes it, the others theirs: a signer's
	// second abort of the epoch (one of an unfilled round first) got none
	// here, and its charge waited for good (TestEarlyNoPubCharged).
	var own *wire.Attest
	if a.Kind == wire.AbortNoPub && e.attestable(a.Round) {
		own = s.roundAttestLocked(e, a.Round)
	}
	if down != nil {
		own = down
	}
	if !s.ref.FirstSight(e.v.ID, e.v.Desc.Number, signer) {
		if ev == nil && own != nil && own != down {
			ev = &wire.Charge{Kind: wire.EvAbort, Number: e.v.Desc.Number, Item: a.Marshal()}
		}
		if ev != nil {
			// The same abort with attestations: they may be news.
			s.noteChargeLocked(e, ev, own, "")
		}
		return false
	}
	// An opened epoch that ends before its final descriptor is certified
	// by its open signatures and this abort (certs.go certifyAbortLocked).
	s.certifyAbortLocked(e, a)
	if ev == nil {
		ev = &wire.Charge{Kind: wire.EvAbort, Number: e.v.Desc.Number, Item: a.Marshal()}
	}
	s.noteChargeLocked(e, ev, own, "")
	return true
}

// The evidence of a budget (§3): the aborts that leave a server out reach
// only the servers of the aborted epochs' chains, so a server outside them
// (out for its own budget, down, cut off) kept the server in its derived
// chain and disagreed with the others on the chain and the leader of the
// next numbers; where the leaders split so that neither side's timeout
// had a quorum, the group stayed at one number for good, and the budget
// window, counted in numbers, never ended (TestSwarm seed 809,
// TestBudgetDropEvidenceShared). A leader that leaves servers out for
// their budget therefore hands the signed aborts that count to its chain
// before the Prepare, and a server counts a fault abort from any roster
// server once it verifies against the certificate of its number: the
// signer's own signature is the evidence, whoever carries it.

// handEvidence sends the budget's evidence to the servers of chain, each
// abort once, all at once, within shortTimeout (as long as the Prepare
// may take); the replies do not matter (a server that did not take it
// refuses the Prepare, and the leader tries again).
func (s *Server) handEvidence(ctx context.Context, chain []peer.ID, n uint64) {
	ev := s.ref.BudgetEvidence(s.h.ID(), func(p peer.ID) bool { return s.refusalOutAt(p, n) })
	if len(ev) == 0 {
		return
	}
	var others []peer.ID
	for _, p := range chain {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	s.sendBudget(ctx, others, ev)
}

// sendBudget sends each piece of ev to the servers to at once, within
// shortTimeout.
func (s *Server) sendBudget(ctx context.Context, others []peer.ID, ev [][]byte) {
	ctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, b := range ev {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.each(ctx, others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeCharge, Body: b, Timeout: transport.ShortTimeout})
		}()
	}
	wg.Wait()
}

// evidenceLocked counts an abort of an epoch not run here, or handed on
// by a server outside its chain, as evidence (onCharge): from a roster
// server, of an epoch whose certificate is kept here, recent enough to
// leave someone out of a next chain. Anything else is acknowledged and
// dropped. Call with s.mu held.
func (s *Server) evidenceLocked(from peer.ID, a *wire.Abort) (wire.Type, []byte, error) {
	if peer.ID(a.Signer) == s.h.ID() {
		return wire.TypeAck, ack, nil // counted when it was signed
	}
	ev := (&wire.Charge{Kind: wire.EvAbort, Number: a.Number, Item: a.Marshal()}).Marshal()
	s.mu.Unlock()
	defer s.mu.Lock()
	return s.onCharge(from, ev)
}

// refusalOut reports whether p is left out of the chain of the next
// number certified here for its refusal budget (refusalOutAt).
func (s *Server) refusalOut(p peer.ID) bool {
	return s.refusalOutAt(p, s.cert.Next())
}

// refusalOutAt reports whether p is out of number n's chain for its
// refusal budget: a function of the evidence logged and n alone, never
// of the number this server reached (one that had signed an open
// descriptor past its certificates counted a window that had ended for
// the others; TestLogReplayAgrees).
func (s *Server) refusalOutAt(p peer.ID, n uint64) bool {
	return s.ref.OutAt(p, n)
}

// writeFileSync writes v as JSON durably (closingsigned.go).
func writeFileSync(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return proto.WriteFileDurably(path, b)
}
