package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Round blame (docs/protocol.md §8): the walk back along one position of one
// round from public evidence to the party that caused the fault.
//
// A MAC failure at S_s's input position p starts with S_s's accusation: its
// MAC share Z' = y'_{s,r}·U_{p,s} with its DLEQ proof and the entry at p as
// S_{s-1} signed it. Every server checks it: if the MAC verifies, the
// accuser is the culprit. A bad payload (its pseudonym signature fails at
// publication) starts at S_{m-1}'s signed output q, which every server
// holds. Then, from the server before the accuser (or from S_{m-1}) towards
// S_0, each server t names the input position p'' that became its output
// position, proves it against its setup shuffle (route proof), reveals
// Z = y_{t,r}·U_{p'',t} and Z' with DLEQ proofs, and shows its input entry
// at p'' with its sender's signature; everyone checks that the MAC there
// verifies and that removing layer t gives t's output. The first step that
// does not check names its server; if every step checks, the client of the
// slot S_0 reached is the culprit. A server reveals its step only after it
// has itself verified every step between the evidence and itself (§8 v2:
// strictly sequential). Only the disrupting position of the disrupting
// round is walked; nothing of any other position is revealed.

// Tags of the signed round-blame messages.
// Tunables.BlameStepWait bounds how long a server asked for its step waits
// to learn of the blame itself (the accusation, or its own check of the
// published payloads), and Tunables.BlameStepTimeout one step's fetch.

// culprit is the party a walk named.
type culprit struct {
	server int    // chain position of a culprit server, or -1
	slot   int    // input slot of a culprit client, or -1
	why    string // the evidence, for operators
}

func (c culprit) String() string {
	if c.server >= 0 {
		return fmt.Sprintf("server %d", c.server)
	}
	return fmt.Sprintf("client in slot %d", c.slot)
}

func serverCulprit(t int, format string, a ...any) *culprit {
	return &culprit{server: t, slot: -1, why: fmt.Sprintf(format, a...)}
}

// stepResult is one verified walk step, a step that named its server, or a
// step that could not be had (the walk stops without a culprit).
type stepResult struct {
	st    *wire.BlameStep
	named *culprit
	err   error
}

type stepCell struct {
	done chan struct{}
	res  stepResult
}

// rblame is one epoch's round blame (at most one: a blame that names a
// client leaves the epoch running with the slot dead, deadslot.go; any
// other outcome, or a second blame, ends the epoch). Guarded by its own
// mutex.
type rblame struct {
	round    uint32
	acc      *wire.Accuse // nil for a bad payload
	start    int          // the first server to take a step (-1: none)
	out      int          // its output position
	outEntry []byte       // and the entry there (the evidence)

	mu    sync.Mutex
	cells map[int]*stepCell

	// accOnce checks the accusation once; accNamed is the accuser if it
	// does not hold. No step is revealed before it has held here.
	accOnce  sync.Once
	accNamed *culprit

	// The dead slot (deadslot.go), guarded by Server.mu: slot is the
	// client slot the walk named here (once slotKnown); settled once
	// the blame's outcome is in (dropped: the slot is dead and the
	// epoch goes on; else the epoch ended). dcells are the drop steps,
	// guarded by mu.
	// double: a second onion for one slot named the client, no walk
	// (its round is not void).
	slotKnown, settled, dropped, double bool
	slot                                int
	dcells                              map[int]*dropCell
}

// accusation returns the accuser as the culprit if its accusation does not
// hold here (nil for a bad payload, which this server found itself).
func (s *Server) accusation(e *sepoch, bl *rblame) *culprit {
	if bl.acc == nil {
		return nil
	}
	bl.accOnce.Do(func() { bl.accNamed = s.checkAccusation(e, bl.acc) })
	return bl.accNamed
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
	if h == nil || e.roundBlamed(r) {
		return
	}
	delete(e.held, r)
	for _, b := range h.bufs {
		s.pool.Put(b)
	}
}

// entrySize is the size of an entry at server t's input.
func (e *sepoch) entrySize(t int) int {
	b, k := e.bk()
	return mix.OnionSize(b, k, len(e.final.Chain)) - mix.TagSize*t
}

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

// checkEvidence checks that ev is server t's input entry at pos in round r
// as its sender signed it: a client's submission at S_0, else an entry of
// S_{t-1}'s signed batch. A second root that S_{t-1} signed for the same
// batch names S_{t-1} (equivocation, §5.2).
func (s *Server) checkEvidence(e *sepoch, r uint32, t, pos int, ev *wire.Evidence) (*culprit, error) {
	v := e.final
	if len(ev.Entry) != e.entrySize(t) {
		return nil, fmt.Errorf("entry of %d bytes, want %d", len(ev.Entry), e.entrySize(t))
	}
	if pos < 0 || pos >= e.n() {
		return nil, fmt.Errorf("position %d of %d", pos, e.n())
	}
	if t == 0 {
		c := v.Desc.Clients[pos]
		return nil, mix.VerifySubmissionDigest(ed25519.PublicKey(c.RegKey[:]), mix.EpochID(v.ID), uint64(r), uint32(pos), mix.SubmissionDigest(ev.Entry), ev.Sig[:])
	}
	b := wire.Batch{Epoch: v.ID, Round: r, S: uint16(t), Root: ev.Root}
	if err := proto.VerifyPeerSig(v.Chain[t-1], batchDigest(&b), ev.Sig); err != nil {
		return nil, fmt.Errorf("root signature of server %d: %w", t-1, err)
	}
	if !blame.MerkleCheck(e.n(), pos, ev.Entry, ev.Path, ev.Root) {
		return nil, errors.New("merkle path does not reach the signed root")
	}
	s.mu.Lock()
	old, ok := e.roots[rootKey{r, uint16(t)}]
	s.mu.Unlock()
	if ok && old.Root != ev.Root {
		return serverCulprit(t-1, "server %d signed two roots for its output of round %d (equivocation)", t-1, r), nil
	}
	return nil, nil
}

// accuse starts blame for a MAC failure at this server's input position pos
// of round r (§8): it reveals its MAC share with its proof, sends the
// accusation to every chain server, and walks. The epoch's secrets stay
// until the walk is done. in is this server's input batch.
func (s *Server) accuse(e *sepoch, r uint32, pos int) {
	v := e.final
	id := mix.EpochID(v.ID)
	s.mu.Lock()
	if e.blameBusy() || !e.acquire() {
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
	bl := newBlame(e, r, a)
	s.mu.Lock()
	e.startBlame(bl)
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
	c := s.walkRound(e, bl)
	s.conclude(e, bl, c)
	// A named client's slot dies and the epoch goes on; otherwise the
	// accuser's notice ends the epoch where the accusation did not.
	s.settleBlame(e, bl, c, true)
	s.mu.Lock()
	e.release()
	s.mu.Unlock()
}

// newBlame sets up the walk of an accusation (a non-nil a) or, with a nil
// a, of a bad payload at output out of round r whose entry is outEntry.
func newBlame(e *sepoch, r uint32, a *wire.Accuse) *rblame {
	bl := &rblame{round: r, acc: a, cells: map[int]*stepCell{}}
	bl.start, bl.out, bl.outEntry = int(a.S)-1, int(a.Pos), a.In.Entry
	return bl
}

// onAccuse takes an accusation from its accuser: checked for its sender
// and signature, it holds this server's secrets and starts the walk here.
func (s *Server) onAccuse(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var a wire.Accuse
	var e *sepoch
	s.mu.Lock()
	for _, x := range s.epochs {
		if x.final != nil && len(body) >= 32 && bytes.Equal(x.final.ID[:], body[:32]) {
			e = x
		}
	}
	s.mu.Unlock()
	if e == nil {
		return 0, nil, errors.New("node: accusation of an unknown epoch")
	}
	if err := a.Unmarshal(body, e.entrySize(0)); err != nil {
		return 0, nil, err
	}
	v := e.final
	if int(a.S) >= len(v.Chain) || v.Chain[a.S] != from || a.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: accusation not from its accuser")
	}
	if err := proto.VerifyPeerSig(from, blame.AccuseDigest(&a), a.Sig); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	if e.blameBusy() || !e.acquire() {
		s.mu.Unlock()
		return wire.TypeAck, ack, nil // one blame per epoch
	}
	bl := newBlame(e, a.Round, &a)
	e.startBlame(bl)
	s.notify()
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c := s.walkRound(e, bl)
		s.conclude(e, bl, c)
		s.settleBlame(e, bl, c, false)
		s.mu.Lock()
		e.release()
		s.mu.Unlock()
	}()
	return wire.TypeAck, ack, nil
}

// payloadBlame starts the walk of a bad payload at output q of round r
// (§5.3, §8): every server found it in S_{m-1}'s signed batch, so each
// starts on its own.
func (s *Server) payloadBlame(e *sepoch, r uint32, q int, payloads [][]byte) {
	s.mu.Lock()
	if q >= len(payloads) || e.blameBusy() || !e.acquire() {
		s.end(e, fmt.Sprintf("round %d: bad pseudonym signature", r))
		s.mu.Unlock()
		return
	}
	m := len(e.final.Chain)
	bl := &rblame{round: r, cells: map[int]*stepCell{}, start: m - 1, out: q, outEntry: append([]byte(nil), payloads[q]...)}
	e.startBlame(bl)
	s.notify()
	s.mu.Unlock()
	s.log.Warn("round void: bad pseudonym signature; blame starts", "round", r)
	c := s.walkRound(e, bl)
	s.conclude(e, bl, c)
	s.settleBlame(e, bl, c, false)
	s.mu.Lock()
	e.release()
	s.mu.Unlock()
}

// walkRound checks the evidence and walks to the culprit; nil if the walk
// could not finish (a step was not delivered: nobody is named).
func (s *Server) walkRound(e *sepoch, bl *rblame) *culprit {
	if bl.acc != nil {
		if c := s.accusation(e, bl); c != nil {
			return c
		}
		if bl.acc.S == 0 {
			return &culprit{server: -1, slot: int(bl.acc.Pos), why: fmt.Sprintf("its signed onion of round %d fails its MAC at layer 0", bl.round)}
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(bl.start+1)*s.cfg.Timing.BlameStepTimeout)
	defer cancel()
	var last *wire.BlameStep
	for t := bl.start; t >= 0; t-- {
		res := s.stepOf(ctx, e, bl, t)
		if res.named != nil {
			return res.named
		}
		if res.err != nil {
			s.log.Warn("round blame: walk stopped, nobody named", "round", bl.round, "position", t, "err", res.err)
			return nil
		}
		last = res.st
	}
	what := "a payload whose pseudonym signature fails"
	if bl.acc != nil {
		what = fmt.Sprintf("an onion that fails its MAC at layer %d", bl.acc.S)
	}
	return &culprit{server: -1, slot: int(last.In), why: fmt.Sprintf("its signed onion of round %d is %s; every server's step checks", bl.round, what)}
}

// checkAccusation returns the accuser as the culprit if its accusation
// does not hold: its share proof fails, its evidence is not what its
// predecessor signed, or the MAC there verifies.
func (s *Server) checkAccusation(e *sepoch, a *wire.Accuse) *culprit {
	v := e.final
	id := mix.EpochID(v.ID)
	S, p, r := int(a.S), int(a.Pos), a.Round
	if c, err := s.checkEvidence(e, r, S, p, &a.In); c != nil || err != nil {
		if c != nil {
			return c
		}
		return serverCulprit(S, "its accusation of round %d shows no signed entry: %v", r, err)
	}
	Zp, err := group.DecodeNonIdentity(a.Zp[:])
	if err == nil {
		err = mix.VerifyRoundKey(id, S, uint64(r), p, mix.MACKey, v.Yp[S][r], e.steps[S].U[p], Zp, a.ZpProof[:])
	}
	if err != nil {
		return serverCulprit(S, "its MAC share for round %d does not verify: %v", r, err)
	}
	key := mix.ShareKey(id, S, uint64(r), mix.MACKey, Zp)
	if mix.CheckMAC(id, uint64(r), S, key, a.In.Entry) {
		return serverCulprit(S, "it accused an entry of round %d whose MAC verifies (false accusation)", r)
	}
	return nil
}

// stepOf returns server t's checked step, computed once per blame.
func (s *Server) stepOf(ctx context.Context, e *sepoch, bl *rblame, t int) stepResult {
	bl.mu.Lock()
	c, ok := bl.cells[t]
	if !ok {
		c = &stepCell{done: make(chan struct{})}
		bl.cells[t] = c
	}
	bl.mu.Unlock()
	if ok {
		select {
		case <-c.done:
			return c.res
		case <-ctx.Done():
			return stepResult{err: ctx.Err()}
		}
	}
	// Computed under this server's own deadline, not the asker's: the
	// result is shared by every later asker.
	cctx, cancel := context.WithTimeout(s.ctx, time.Duration(bl.start-t+1)*s.cfg.Timing.BlameStepTimeout)
	c.res = s.computeStep(cctx, e, bl, t)
	cancel()
	close(c.done)
	return c.res
}

func (s *Server) computeStep(ctx context.Context, e *sepoch, bl *rblame, t int) stepResult {
	if t < 0 || t > bl.start {
		return stepResult{err: fmt.Errorf("server %d is not on the walk", t)}
	}
	out, outEntry := bl.out, bl.outEntry
	if t == bl.start && s.accusation(e, bl) != nil {
		// A false accusation walks nowhere: nobody reveals a step for it.
		return stepResult{err: errors.New("the accusation does not hold")}
	}
	if t < bl.start {
		prev := s.stepOf(ctx, e, bl, t+1)
		if prev.named != nil || prev.err != nil {
			return stepResult{err: errors.New("the walk stopped at a later server")}
		}
		out, outEntry = int(prev.st.In), prev.st.Input.Entry
	}
	v := e.final
	var st *wire.BlameStep
	if t == e.pos {
		var err error
		if st, err = s.ownBlameStep(e, bl, out); err != nil {
			return stepResult{err: err}
		}
	} else {
		req := wire.BlameReq{Epoch: v.ID, Round: bl.round, T: uint16(t), Out: uint32(out)}
		rep, err := transport.Call(ctx, s.h, v.Chain[t], transport.Request{Proto: ProtoEpoch, Type: wire.TypeBlameReq, Body: req.Marshal(), Timeout: s.cfg.Timing.BlameStepTimeout, Max: e.entrySize(0) + 4096})
		if err != nil {
			return stepResult{err: fmt.Errorf("step of server %d: %w", t, err)}
		}
		st = &wire.BlameStep{}
		if err := st.Unmarshal(rep, e.entrySize(0)); err != nil {
			return stepResult{named: serverCulprit(t, "its step of round %d is malformed: %v", bl.round, err)}
		}
	}
	if c := s.checkStep(e, bl, t, out, outEntry, st); c != nil {
		// The step stays as evidence (and a server's own step, even one
		// that names it, is what the others must check themselves).
		return stepResult{st: st, named: c}
	}
	return stepResult{st: st}
}

// ownBlameStep is this server's step at output position out: route proof, both
// shares with their proofs, and the input entry. Only called once every
// later step checked here.
func (s *Server) ownBlameStep(e *sepoch, bl *rblame, out int) (*wire.BlameStep, error) {
	v := e.final
	id := mix.EpochID(v.ID)
	t, r := e.pos, bl.round
	s.mu.Lock()
	sec, rk, U := e.sec, e.rk, e.U
	s.mu.Unlock()
	if sec == nil || rk == nil {
		return nil, errors.New("node: step secrets gone before the walk")
	}
	in, route, err := sec.ProveRoute(id, v.ServerKeys, e.stepInputs[t], e.steps[t], out, s.rand)
	if err != nil {
		return nil, fmt.Errorf("node: route proof: %w", err)
	}
	Z, zProof, err := mix.ProveRoundKey(id, t, uint64(r), in, mix.EncKey, rk, U[in], s.rand)
	if err != nil {
		return nil, err
	}
	Zp, zpProof, err := mix.ProveRoundKey(id, t, uint64(r), in, mix.MACKey, rk, U[in], s.rand)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	ev, err := e.inputEvidence(r, in)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	st := &wire.BlameStep{Epoch: v.ID, Round: r, T: uint16(t), Out: uint32(out), In: uint32(in), Route: route, Input: ev}
	copy(st.Z[:], Z.Bytes())
	copy(st.ZProof[:], zProof)
	copy(st.Zp[:], Zp.Bytes())
	copy(st.ZpProof[:], zpProof)
	if st.Sig, err = proto.Sign(s.priv, blame.BlameStepDigest(st)); err != nil {
		return nil, err
	}
	return st, nil
}

// checkStep checks server t's step at output position out, whose entry is
// outEntry (§8 step 3); it names t if the step does not check (or t's
// predecessor if the step shows it signed two roots).
func (s *Server) checkStep(e *sepoch, bl *rblame, t, out int, outEntry []byte, st *wire.BlameStep) *culprit {
	v := e.final
	id := mix.EpochID(v.ID)
	r := bl.round
	if err := proto.VerifyPeerSig(v.Chain[t], blame.BlameStepDigest(st), st.Sig); err != nil {
		return serverCulprit(t, "its step of round %d is not signed by it: %v", r, err)
	}
	if st.Epoch != v.ID || st.Round != r || int(st.T) != t || int(st.Out) != out {
		return serverCulprit(t, "its step answers another question (round %d, server %d, output %d)", st.Round, st.T, st.Out)
	}
	in := int(st.In)
	if err := mix.VerifyRoute(id, t, v.ServerKeys, e.stepInputs[t], e.steps[t], out, in, st.Route); err != nil {
		return serverCulprit(t, "its route from output %d of round %d does not verify against its setup shuffle: %v", out, r, err)
	}
	U := e.steps[t].U[in]
	Z, err := group.DecodeNonIdentity(st.Z[:])
	if err == nil {
		err = mix.VerifyRoundKey(id, t, uint64(r), in, mix.EncKey, v.Y[t][r], U, Z, st.ZProof[:])
	}
	if err != nil {
		return serverCulprit(t, "its encryption share of round %d does not verify: %v", r, err)
	}
	Zp, err := group.DecodeNonIdentity(st.Zp[:])
	if err == nil {
		err = mix.VerifyRoundKey(id, t, uint64(r), in, mix.MACKey, v.Yp[t][r], U, Zp, st.ZpProof[:])
	}
	if err != nil {
		return serverCulprit(t, "its MAC share of round %d does not verify: %v", r, err)
	}
	if c, err := s.checkEvidence(e, r, t, in, &st.Input); c != nil || err != nil {
		if c != nil {
			return c
		}
		return serverCulprit(t, "its input entry of round %d is not as its sender signed it: %v", r, err)
	}
	if !mix.CheckMAC(id, uint64(r), t, mix.ShareKey(id, t, uint64(r), mix.MACKey, Zp), st.Input.Entry) {
		return serverCulprit(t, "it passed on an entry of round %d whose MAC fails", r)
	}
	plain, err := mix.DecryptLayer(uint64(r), t, mix.ShareKey(id, t, uint64(r), mix.EncKey, Z), st.Input.Entry)
	if err != nil || !bytes.Equal(plain, outEntry) {
		return serverCulprit(t, "its output of round %d is not its input with its layer removed (it altered the entry)", r)
	}
	return nil
}

// onBlameReq answers a walk request for this server's step: only once this
// server has itself checked every step between the evidence and itself.
func (s *Server) onBlameReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.BlameReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := s.stepEpoch(req.Epoch, from, req.T, "blame")
	if err != nil {
		return 0, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.BlameStepWait)
	var bl *rblame
	// Wait for this round's own blame: the accusation may reach this
	// server after the request, and an earlier blame of the epoch (a
	// dead slot's) is not this one.
	_ = s.waitFor(wctx, func() bool { bl = e.blameOf(req.Round); return bl != nil || e.ended })
	cancel()
	if bl == nil {
		return 0, nil, errors.New("node: no round blame of this round here")
	}
	sctx, cancel := context.WithTimeout(ctx, time.Duration(bl.start+1)*s.cfg.Timing.BlameStepTimeout)
	defer cancel()
	res := s.stepOf(sctx, e, bl, e.pos)
	if res.st == nil {
		return 0, nil, errors.New("node: the walk does not reach this server")
	}
	if int(res.st.Out) != int(req.Out) {
		return 0, nil, fmt.Errorf("node: step asked at output %d, the walk reaches %d here", req.Out, res.st.Out)
	}
	return wire.TypeBlameStep, res.st.Marshal(), nil
}
