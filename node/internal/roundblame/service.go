package roundblame

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Secrets are what this server's own steps are proven with, read under
// the server's lock: its setup step secret, its round keys, the setup's
// U at its input and its permutation.
type Secrets struct {
	Sec     *mix.StepSecret
	RK      *mix.RoundKeys
	U       []*group.Element
	Forward []int
}

// Host is what a walk asks of its server.
type Host interface {
	// Locked runs f under the server's lock (what settles a Blame).
	Locked(f func())
	// Call asks peer p.
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	// Setup is the epoch's setup steps.
	Setup(ep *Ep) Setup
	// Secrets are this server's secrets of the epoch (under its lock).
	Secrets(ep *Ep) Secrets
	// Root is the signed root of round r at server t's input held
	// here (under its lock).
	Root(ep *Ep, r uint32, t int) (wire.Root, bool)
	// InputEvidence is this server's input entry at pos in round r,
	// provable alone (under its lock).
	InputEvidence(ep *Ep, r uint32, pos int) (wire.Evidence, error)
	// StepEpoch is the epoch of a step request (a walk's or a
	// reveal's, what) from a server of its chain, asking this server
	// for its own position t.
	StepEpoch(id [32]byte, from peer.ID, t uint16, what string) (*Ep, error)
	// WaitFor blocks until cond, run under the server's lock, holds or
	// ctx ends.
	WaitFor(ctx context.Context, cond func() bool) error
	// Ended reports whether the epoch ended here (under the lock).
	Ended(ep *Ep) bool
	// AwaitSetup waits for the epoch's setup to be verified here;
	// false if it was not (the epoch ended).
	AwaitSetup(ep *Ep) bool
	// FinalEpoch is the epoch held here whose final descriptor's id
	// body starts with, or nil (takes the lock).
	FinalEpoch(body []byte) *Ep
	// Epoch is the epoch of id held here, once its final descriptor is
	// (takes the lock).
	Epoch(id [32]byte) (*Ep, error)
	// SendEvidence delivers evidence of type typ to every chain server
	// but this one and the culprit at chain position culprit (-1: a
	// client), retrying until each acknowledges or the evidence's
	// deadline passes.
	SendEvidence(ep *Ep, typ wire.Type, body []byte, perTry time.Duration, culprit int) error

	// Under the lock (Locked): Acquire takes the epoch's secrets for a
	// use outside it (false once the epoch ended), Release gives them
	// back; End ends the epoch telling the chain, EndQuiet without;
	// Notify wakes the server's waits; ForwardPending forwards the
	// rounds a dead slot no longer holds up.
	Acquire(ep *Ep) bool
	Release(ep *Ep)
	End(ep *Ep, reason string)
	EndQuiet(ep *Ep, reason string)
	Notify()
	ForwardPending(ep *Ep)

	// VoidRound marks round r void here, unless it is: whether it
	// was not (under the lock).
	VoidRound(ep *Ep, r uint32) bool

	// Name logs a culprit with its evidence, records it and excludes it
	// (§8 "After a blame"). Go runs f as one of the server's
	// goroutines. SignProposal signs a round list as S_0 proposes it;
	// Each sends r to every server of chain, this one included, and
	// returns their replies in order.
	Name(ep *Ep, round uint32, c *Culprit, evidence [][]byte)
	Go(f func())
	SignProposal(rl *wire.RoundList) error
	Each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error)
}

// Hooks are the tests' hook points (Config.Hooks).
type Hooks interface {
	// Liar: this server lies about drop steps (and so takes its own
	// as it is).
	Liar() bool
	// LieDrop: its drop step of round r names another output.
	LieDrop(r uint32) bool
	// RefuseEvidence: this server refuses a delivery of evidence of
	// type t (a lost delivery, to be retried).
	RefuseEvidence(t wire.Type) bool
}

// Config is what a walk takes of its server as values.
type Config struct {
	Ctx  context.Context // the server's life: a step is computed under it
	Priv crypto.PrivKey
	Rand io.Reader
	Log  *slog.Logger
	// StepTimeout bounds one step's fetch (Tunables.BlameStepTimeout),
	// StepWait how long a server asked for its step waits to learn of
	// the blame itself (Tunables.BlameStepWait).
	StepTimeout, StepWait time.Duration
	// Hooks are the tests' hook points, nil in the binary: every call
	// sits behind hooksBuilt (TestBinaryHasNoTestHooks).
	Hooks Hooks
}

// Service walks and reveals for one server.
type Service struct {
	Config
	h Host
}

// New is the walks of the server h, with cfg.
func New(cfg Config, h Host) *Service { return &Service{Config: cfg, h: h} }

func (s *Service) hooked() bool { return hooksBuilt && s.Hooks != nil }

func (s *Service) roots(ep *Ep) Roots {
	return func(r uint32, t int) (wire.Root, bool) { return s.h.Root(ep, r, t) }
}

// Accusation returns the accuser as the culprit if its accusation does
// not hold here (nil for a bad payload, which this server found itself).
func (s *Service) Accusation(ep *Ep, bl *Blame) *Culprit {
	if bl.Acc == nil {
		return nil
	}
	bl.accOnce.Do(func() { bl.accNamed = CheckAccusation(ep, s.h.Setup(ep), s.roots(ep), bl.Acc) })
	return bl.accNamed
}

// Walk checks the evidence and walks to the culprit; nil if the walk
// could not finish (a step was not delivered: nobody is named).
func (s *Service) Walk(ep *Ep, bl *Blame) *Culprit {
	if bl.Acc != nil {
		if c := s.Accusation(ep, bl); c != nil {
			return c
		}
		if bl.Acc.S == 0 {
			return &Culprit{Server: -1, Slot: int(bl.Acc.Pos), Why: fmt.Sprintf("its signed onion of round %d fails its MAC at layer 0", bl.Round)}
		}
	}
	ctx, cancel := context.WithTimeout(s.Ctx, time.Duration(bl.start+1)*s.StepTimeout)
	defer cancel()
	var last *wire.BlameStep
	for t := bl.start; t >= 0; t-- {
		res := s.StepOf(ctx, ep, bl, t)
		if res.Named != nil {
			return res.Named
		}
		if res.Err != nil {
			s.Log.Warn("round blame: walk stopped, nobody named", "round", bl.Round, "position", t, "err", res.Err)
			return nil
		}
		last = res.St
	}
	what := "a payload whose pseudonym signature fails"
	if bl.Acc != nil {
		what = fmt.Sprintf("an onion that fails its MAC at layer %d", bl.Acc.S)
	}
	return &Culprit{Server: -1, Slot: int(last.In), Why: fmt.Sprintf("its signed onion of round %d is %s; every server's step checks", bl.Round, what)}
}

// StepOf returns server t's checked step, computed once per blame.
func (s *Service) StepOf(ctx context.Context, ep *Ep, bl *Blame, t int) StepResult {
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
			return StepResult{Err: ctx.Err()}
		}
	}
	// Computed under this server's own deadline, not the asker's: the
	// result is shared by every later asker.
	cctx, cancel := context.WithTimeout(s.Ctx, time.Duration(bl.start-t+1)*s.StepTimeout)
	c.res = s.computeStep(cctx, ep, bl, t)
	cancel()
	close(c.done)
	return c.res
}

func (s *Service) computeStep(ctx context.Context, ep *Ep, bl *Blame, t int) StepResult {
	if t < 0 || t > bl.start {
		return StepResult{Err: fmt.Errorf("server %d is not on the walk", t)}
	}
	out, outEntry := bl.out, bl.outEntry
	if t == bl.start && s.Accusation(ep, bl) != nil {
		// A false accusation walks nowhere: nobody reveals a step for it.
		return StepResult{Err: errors.New("the accusation does not hold")}
	}
	if t < bl.start {
		prev := s.StepOf(ctx, ep, bl, t+1)
		if prev.Named != nil || prev.Err != nil {
			return StepResult{Err: errors.New("the walk stopped at a later server")}
		}
		out, outEntry = int(prev.St.In), prev.St.Input.Entry
	}
	v := ep.V
	var st *wire.BlameStep
	if t == ep.Pos {
		var err error
		if st, err = s.ownStep(ep, bl, out); err != nil {
			return StepResult{Err: err}
		}
	} else {
		req := wire.BlameReq{Epoch: v.ID, Round: bl.Round, T: uint16(t), Out: uint32(out)}
		rep, err := s.h.Call(ctx, v.Chain[t], transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeBlameReq, Body: req.Marshal(), Timeout: s.StepTimeout, Max: ep.EntrySize(0) + 4096})
		if err != nil {
			return StepResult{Err: fmt.Errorf("step of server %d: %w", t, err)}
		}
		st = &wire.BlameStep{}
		if err := st.Unmarshal(rep, ep.EntrySize(0)); err != nil {
			return StepResult{Named: ServerCulprit(t, "its step of round %d is malformed: %v", bl.Round, err)}
		}
	}
	if c := CheckStep(ep, s.h.Setup(ep), s.roots(ep), bl.Round, t, out, outEntry, st); c != nil {
		// The step stays as evidence (and a server's own step, even one
		// that names it, is what the others must check themselves).
		return StepResult{St: st, Named: c}
	}
	return StepResult{St: st}
}

// ownStep is this server's step at output position out: route proof, both
// shares with their proofs, and the input entry. Only called once every
// later step checked here.
func (s *Service) ownStep(ep *Ep, bl *Blame, out int) (*wire.BlameStep, error) {
	v := ep.V
	id := mix.EpochID(v.ID)
	t, r := ep.Pos, bl.Round
	x := s.h.Secrets(ep)
	sec, rk, U := x.Sec, x.RK, x.U
	if sec == nil || rk == nil {
		return nil, errors.New("node: step secrets gone before the walk")
	}
	su := s.h.Setup(ep)
	in, route, err := sec.ProveRoute(id, v.ServerKeys, su.Inputs[t], su.Steps[t], out, s.Rand)
	if err != nil {
		return nil, fmt.Errorf("node: route proof: %w", err)
	}
	Z, zProof, err := mix.ProveRoundKey(id, t, uint64(r), in, mix.EncKey, rk, U[in], s.Rand)
	if err != nil {
		return nil, err
	}
	Zp, zpProof, err := mix.ProveRoundKey(id, t, uint64(r), in, mix.MACKey, rk, U[in], s.Rand)
	if err != nil {
		return nil, err
	}
	ev, err := s.h.InputEvidence(ep, r, in)
	if err != nil {
		return nil, err
	}
	st := &wire.BlameStep{Epoch: v.ID, Round: r, T: uint16(t), Out: uint32(out), In: uint32(in), Route: route, Input: ev}
	copy(st.Z[:], Z.Bytes())
	copy(st.ZProof[:], zProof)
	copy(st.Zp[:], Zp.Bytes())
	copy(st.ZpProof[:], zpProof)
	if st.Sig, err = proto.Sign(s.Priv, blame.BlameStepDigest(st)); err != nil {
		return nil, err
	}
	return st, nil
}
