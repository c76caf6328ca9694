package node

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/transport"
)

// Round blame (docs/protocol.md §8): a blame's run, from public evidence
// back along one position of one round to the party that caused the
// fault, is package internal/roundblame's (Service, over blameHost); here
// this server's own accusation starts one, its input batches are kept for
// the walk, and the culprit is recorded and excluded (roundblame_after.go,
// deadslot.go).

// blameEp is e as the walk sees it.
func blameEp(e *sepoch) *roundblame.Ep {
	return &roundblame.Ep{V: e.final, Pos: e.pos, Blames: &e.blames, Ref: e}
}

func ofBlame(ep *roundblame.Ep) *sepoch { return ep.Ref.(*sepoch) }

// walks is this server's round-blame walks.
func (s *Server) walks() *roundblame.Service {
	return roundblame.New(roundblame.Config{Ctx: s.ctx, Priv: s.priv, Rand: s.rand, Log: s.log,
		StepTimeout: s.cfg.Timing.BlameStepTimeout, StepWait: s.cfg.Timing.BlameStepWait, Hooks: s.blameHooks()}, blameHost{s})
}

type blameHost struct{ s *Server }

func (h blameHost) Locked(f func()) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	f()
}

func (h blameHost) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, h.s.h, p, r)
}

func (h blameHost) Setup(ep *roundblame.Ep) roundblame.Setup {
	e := ofBlame(ep)
	return roundblame.Setup{Inputs: e.stepInputs, Steps: e.steps}
}

func (h blameHost) Secrets(ep *roundblame.Ep) roundblame.Secrets {
	e := ofBlame(ep)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return roundblame.Secrets{Sec: e.sec, RK: e.rk, U: e.U, Forward: e.forward}
}

func (h blameHost) Root(ep *roundblame.Ep, r uint32, t int) (wire.Root, bool) {
	e := ofBlame(ep)
	h.s.mu.Lock()
	old, ok := e.roots[rootKey{r, uint16(t)}]
	h.s.mu.Unlock()
	return old, ok
}

func (h blameHost) StepEpoch(id [32]byte, from peer.ID, t uint16, what string) (*roundblame.Ep, error) {
	e, err := h.s.stepEpoch(id, from, t, what)
	if err != nil {
		return nil, err
	}
	return blameEp(e), nil
}

func (h blameHost) WaitFor(ctx context.Context, cond func() bool) error {
	return h.s.waitFor(ctx, cond)
}
func (h blameHost) Ended(ep *roundblame.Ep) bool      { return ofBlame(ep).ended }
func (h blameHost) AwaitSetup(ep *roundblame.Ep) bool { return h.s.awaitSetup(ofBlame(ep)) }

func (h blameHost) FinalEpoch(body []byte) *roundblame.Ep {
	var e *sepoch
	h.s.mu.Lock()
	for _, x := range h.s.epochs {
		if x.final != nil && len(body) >= 32 && bytes.Equal(x.final.ID[:], body[:32]) {
			e = x
		}
	}
	h.s.mu.Unlock()
	if e == nil {
		return nil
	}
	return blameEp(e)
}

func (h blameHost) Epoch(id [32]byte) (*roundblame.Ep, error) {
	e, err := h.s.epochFor(id)
	if err != nil {
		return nil, err
	}
	return blameEp(e), nil
}

func (h blameHost) SendEvidence(ep *roundblame.Ep, typ wire.Type, body []byte, perTry time.Duration, culprit int) error {
	return h.s.sendEvidence(ofBlame(ep), typ, body, perTry, culprit)
}

func (h blameHost) Acquire(ep *roundblame.Ep) bool            { return ofBlame(ep).acquire() }
func (h blameHost) Release(ep *roundblame.Ep)                 { ofBlame(ep).release() }
func (h blameHost) End(ep *roundblame.Ep, reason string)      { h.s.end(ofBlame(ep), reason) }
func (h blameHost) EndQuiet(ep *roundblame.Ep, reason string) { h.s.endQuiet(ofBlame(ep), reason) }
func (h blameHost) Notify()                                   { h.s.notify() }
func (h blameHost) ForwardPending(ep *roundblame.Ep)          { h.s.forwardPending(ofBlame(ep)) }

// VoidRound: call with s.mu held.
func (h blameHost) VoidRound(ep *roundblame.Ep, r uint32) bool {
	e := ofBlame(ep)
	if x := e.round(r); !x.void {
		e.voided(x, r)
		return true
	}
	return false
}

func (h blameHost) SignProposal(rl *wire.RoundList) error { return h.s.signProposal(rl) }

func (h blameHost) Each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error) {
	return h.s.each(ctx, chain, r)
}

func (h blameHost) Name(ep *roundblame.Ep, round uint32, c *roundblame.Culprit, evidence [][]byte) {
	h.s.name(ofBlame(ep), round, c, evidence)
}

func (h blameHost) Go(f func()) {
	h.s.wg.Add(1)
	go func() {
		defer h.s.wg.Done()
		f()
	}()
}

func (h blameHost) InputEvidence(ep *roundblame.Ep, r uint32, pos int) (wire.Evidence, error) {
	h.s.mu.Lock()
	ev, err := ofBlame(ep).inputEvidence(r, pos)
	h.s.mu.Unlock()
	return ev, err
}

// heldInput is a mixing server's input batch of one round, kept until the
// round is published here (a later server's MAC failure or a bad payload
// walks through it): the entries, and the pool buffers they live in.
type heldInput struct {
	entries [][]byte
	bufs    [][]byte
}

// holdInput keeps round r's input batch; false if the epoch is over (the
// caller gives the buffers back). Call with s.mu held.
func (e *sepoch) holdInput(r uint32, entries [][]byte, bufs [][]byte) bool {
	if e.ended {
		return false
	}
	if e.held == nil {
		e.held = map[uint32]*heldInput{}
	}
	if _, ok := e.held[r]; ok {
		return false
	}
	e.held[r] = &heldInput{entries: entries, bufs: bufs}
	return true
}

// releaseInput gives round r's held input back to the pool once the round
// is published here and no blame walks it. Call with s.mu held.
func (s *Server) releaseInput(e *sepoch, r uint32) {
	h := e.held[r]
	if h == nil || e.blames.Walked(r) {
		return
	}
	delete(e.held, r)
	for _, b := range h.bufs {
		s.pool.Put(b)
	}
}

// entrySize is the size of an entry at server t's input.
func (e *sepoch) entrySize(t int) int { return roundblame.EntrySize(e.final, t) }

// inputEvidence is this server's input entry at pos in round r (server t =
// e.pos), provable alone. Call with s.mu held.
func (e *sepoch) inputEvidence(r uint32, pos int) (wire.Evidence, error) {
	var ev wire.Evidence
	if e.pos == 0 {
		x := e.rounds[r]
		if x == nil {
			return ev, fmt.Errorf("node: no submissions of round %d kept", r)
		}
		sub, ok := x.subs[uint32(pos)]
		if !ok {
			return ev, fmt.Errorf("node: no submission in slot %d of round %d", pos, r)
		}
		ev.Entry, ev.Sig = append([]byte(nil), sub.Onion...), sub.Sig
		return ev, nil
	}
	h := e.held[r]
	root, ok := e.roots[rootKey{r, uint16(e.pos)}]
	if h == nil || !ok || pos < 0 || pos >= len(h.entries) {
		return ev, fmt.Errorf("node: input batch of round %d not kept", r)
	}
	ev.Entry = append([]byte(nil), h.entries[pos]...)
	ev.Path = blame.MerklePath(h.entries, pos)
	ev.Root, ev.Sig = root.Root, root.Sig
	return ev, nil
}

// accuse starts blame for a MAC failure at this server's input position pos
// of round r (§8): it reveals its MAC share with its proof, sends the
// accusation to every chain server, and walks. The epoch's secrets stay
// until the walk is done. in is this server's input batch.
func (s *Server) accuse(e *sepoch, r uint32, pos int) {
	v := e.final
	id := mix.EpochID(v.ID)
	s.mu.Lock()
	if e.blames.Busy() || !e.acquire() {
		s.end(e, fmt.Sprintf("round %d void: MAC failure at layer %d", r, e.pos))
		s.mu.Unlock()
		return
	}
	rk, U := e.rk, e.U
	ev, err := e.inputEvidence(r, pos)
	s.mu.Unlock()
	done := func(reason string) {
		s.mu.Lock()
		s.end(e, reason)
		e.release()
		s.mu.Unlock()
	}
	if err != nil {
		s.log.Warn("round blame: no evidence of the accused entry", "round", r, "err", err)
		done(fmt.Sprintf("round %d void: MAC failure at layer %d", r, e.pos))
		return
	}
	Zp, proof, err := mix.ProveRoundKey(id, e.pos, uint64(r), pos, mix.MACKey, rk, U[pos], s.rand)
	if err != nil {
		done(fmt.Sprintf("round %d void: MAC failure; share proof: %v", r, err))
		return
	}
	a := &wire.Accuse{Epoch: v.ID, Round: r, S: uint16(e.pos), Pos: uint32(pos), In: ev}
	copy(a.Zp[:], Zp.Bytes())
	copy(a.ZpProof[:], proof)
	if a.Sig, err = proto.Sign(s.priv, blame.AccuseDigest(a)); err != nil {
		done("sign accusation")
		return
	}
	bl := roundblame.NewAccused(r, a)
	s.mu.Lock()
	e.blames.Start(bl)
	s.mu.Unlock()
	s.log.Warn("round void: MAC failure; blame starts", "round", r, "layer", e.pos)
	// The walk asks the others for their steps only once they hold the
	// accusation: a lost delivery is retried, within the one short
	// deadline a single attempt had (a server still without it by then
	// stops the walk as a silent one does).
	if err := s.sendToChain(e, ProtoEpoch, wire.TypeAccuse, a.Marshal(), transport.ShortTimeout, transport.ShortTimeout, -1); err != nil {
		s.log.Warn("round blame: accusation not delivered everywhere", "round", r, "err", err)
	}
	s.hookRun().Probe(e, r, pos)
	// A named client's slot dies and the epoch goes on; otherwise the
	// accuser's notice ends the epoch where the accusation did not.
	s.walks().Run(blameEp(e), bl, true)
}
