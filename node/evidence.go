package node

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/evidence"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Aborts, the evidence log and evidence delivery (docs/protocol.md §3,
// §8) are package internal/evidence's (Service, over evidenceHost); here
// an epoch ends for a round it could not fill or a publication it lacks,
// and the evidence of round blame goes to the chain.

// RefusalFile holds the counted aborts in a data directory (JSON).
const RefusalFile = chargelog.File

// evEp is e as the evidence sees it. Call with s.mu held.
func evEp(e *sepoch) *evidence.Ep {
	return &evidence.Ep{V: e.v, Final: e.final, PreFinal: &e.preFinal, Down: &e.down, KeyNamed: &e.keyNamed, Ref: e}
}

func ofEv(ep *evidence.Ep) *sepoch { return ep.Ref.(*sepoch) }

// evs is this server's evidence.
func (s *Server) evs() *evidence.Service {
	return evidence.New(evidence.Config{Ctx: s.ctx, Self: s.h.ID(), Priv: s.priv, Log: s.log, Ref: &s.ref, Certs: &s.cert, Keys: &s.keys,
		AbortSettle: s.cfg.Timing.AbortSettle, Probe: s.cfg.Timing.ServerProbe, Backoff: s.cfg.Timing.EvidenceBackoff, BackoffMax: s.cfg.Timing.EvidenceBackoffMax,
		Hooks: s.evidenceHooks()}, evidenceHost{s})
}

type evidenceHost struct{ s *Server }

func (h evidenceHost) Locked(f func()) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	f()
}

func (h evidenceHost) Each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error) {
	return h.s.each(ctx, chain, r)
}

func (h evidenceHost) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, h.s.h, p, r)
}

func (h evidenceHost) NotifyAll(to []peer.ID, t wire.Type, body []byte) { h.s.notifyAll(to, t, body) }

func (h evidenceHost) Go(f func()) {
	h.s.wg.Add(1)
	go func() {
		defer h.s.wg.Done()
		f()
	}()
}

func (h evidenceHost) InRoster(p peer.ID) bool  { return h.s.roster.get(p) != nil }
func (h evidenceHost) GroupPeer(p peer.ID) bool { return h.s.groupPeer(p) }
func (h evidenceHost) Number() uint64           { return h.s.lastNumber() }

func (h evidenceHost) Epoch(id [32]byte) *evidence.Ep {
	if e := h.s.epochs[id]; e != nil && e.v != nil {
		return evEp(e)
	}
	return nil
}

func (h evidenceHost) FinalEpoch(id [32]byte) (*evidence.Ep, error) {
	e, err := h.s.epochFor(id)
	if err != nil {
		return nil, err
	}
	return evEp(e), nil
}

// OwnKeyEvidence: kept when this server was the slot's primary and its
// client registered here.
func (h evidenceHost) OwnKeyEvidence(ep *evidence.Ep, slot int) *wire.KeyEvidence {
	e := ofEv(ep)
	cl := e.final.Desc.Clients[slot]
	if lt, ok := e.reg.LT(cl.RegKey); ok && int(cl.Primary) == e.pos {
		return &wire.KeyEvidence{Epoch: e.final.ID, Slot: uint32(slot), LTKey: lt.Key, LTSig: lt.Sig}
	}
	return nil
}

func (h evidenceHost) Now(ep *evidence.Ep) *evidence.Ep        { return evEp(ofEv(ep)) }
func (h evidenceHost) EndQuiet(ep *evidence.Ep, reason string) { h.s.endQuiet(ofEv(ep), reason) }
func (h evidenceHost) CertifyAbort(ep *evidence.Ep, a *wire.Abort) {
	h.s.certifyAbortLocked(ofEv(ep), a)
}
func (h evidenceHost) Voided(ep *evidence.Ep, r uint32) bool { return ofEv(ep).blames.Voided(r) }

func (h evidenceHost) AdmitAttest(ep *evidence.Ep, r uint32) *wire.Attest {
	if e := ofEv(ep); e.admit(r) == nil {
		return h.s.roundAttestLocked(e, r)
	}
	return nil
}

func (h evidenceHost) PubAttest(ep *evidence.Ep, r uint32) *wire.Attest {
	if e := ofEv(ep); e.attestable(r) {
		return h.s.roundAttestLocked(e, r)
	}
	return nil
}

func (h evidenceHost) EndOf(ep *evidence.Ep) (bool, time.Time, uint64) {
	e := ofEv(ep)
	return e.ended, e.endedAt, e.liveAtEnd
}

func (h evidenceHost) SignAttest(ep *evidence.Ep, kind uint8, round uint32, lacking uint64) *wire.Attest {
	return h.s.signAttestLocked(ofEv(ep), kind, round, lacking)
}

func (h evidenceHost) AskAttests(ep *evidence.Ep, kind uint8, round uint32, skip peer.ID) []wire.Attest {
	return h.s.askAttests(ofEv(ep), kind, round, skip)
}

func (h evidenceHost) LastSeen(p peer.ID) (time.Time, bool) { return h.s.roster.LastSeen(p) }

// backedAgainst is evidence.Backed.
func backedAgainst(ev *wire.Charge, m, j int) bool { return evidence.Backed(ev, m, j) }

// askedDownLocked is evidence.Service.AskedDown. Call with s.mu held.
func (s *Server) askedDownLocked(e *sepoch, j int) *wire.Attest { return s.evs().AskedDown(evEp(e), j) }

// noteChargeLocked logs ev of held epoch e (evidence.Service.NoteCharge).
// Call with s.mu held.
func (s *Server) noteChargeLocked(e *sepoch, ev *wire.Charge, own *wire.Attest, from peer.ID) {
	s.evs().NoteCharge(evEp(e), ev, own, from)
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
	s.evs().BroadcastAbort(evEp(e), wire.AbortUnfilled, r, reason)
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
	s.evs().BroadcastAbort(evEp(e), wire.AbortNoPub, q, reason)
}

// refusalOutAt reports whether p is out of number n's chain for its
// refusal budget: a function of the evidence logged and n alone, never
// of the number this server reached (one that had signed an open
// descriptor past its certificates counted a window that had ended for
// the others; TestLogReplayAgrees).
func (s *Server) refusalOutAt(p peer.ID, n uint64) bool {
	return s.ref.OutAt(p, n)
}

// deliverAll is evidence.DeliverAll: a delivery retried with back-off.
func deliverAll(ctx context.Context, peers []peer.ID, first, most time.Duration, send func(context.Context, peer.ID) error) error {
	return evidence.DeliverAll(ctx, peers, first, most, send)
}

// sendEvidence delivers evidence of type typ (round protocol) to every
// chain server of e other than this one and the culprit (chain position;
// -1 for a client's fault), retrying until each acknowledges or
// evidence.Deadline passes. The culprit is left out: it has no reason to
// acknowledge, and the sender would wait out the deadline on it. Call
// after naming the culprit here, without s.mu.
func (s *Server) sendEvidence(e *sepoch, typ wire.Type, body []byte, perTry time.Duration, culprit int) error {
	return s.sendToChain(e, ProtoRound, typ, body, perTry, evidence.Deadline, culprit)
}

// sendToChain delivers a message to every chain server of e other than
// this one and the one at position skip (evidence.Service.SendToChain).
// Without s.mu.
func (s *Server) sendToChain(e *sepoch, proto protocol.ID, typ wire.Type, body []byte, perTry, deadline time.Duration, skip int) error {
	return s.evs().SendToChain(e.final.Chain, proto, typ, body, perTry, deadline, skip)
}

// fromChain reports whether p is a server of e's chain: only they send
// evidence of the epoch's faults.
func fromChain(e *sepoch, p peer.ID) bool { return proto.InChain(e.final.Chain, p) }

// stepEpoch is the epoch of a step request (a walk's or a reveal's) and
// checks who asks: a server of its chain, asking this server for its own
// position t.
func (s *Server) stepEpoch(id [32]byte, from peer.ID, t uint16, what string) (*sepoch, error) {
	e, err := s.epochFor(id)
	if err != nil {
		return nil, err
	}
	if !fromChain(e, from) || int(t) != e.pos {
		return nil, fmt.Errorf("node: %s step asked of the wrong server", what)
	}
	return e, nil
}
