package dupwalk

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

// A duplicate U or P at setup (docs/protocol.md §4.1 v3): every server
// walks BOTH positions back to their slots with the route proofs of §8
// step 1, signs an abort naming the value and the two slots, and gives
// the two clients Window to prove knowledge of the value's discrete
// log (mix.ProveShare); the verdict's rules are blame.Dup's. The epoch
// ends when the verdict is in, so that the next epoch's registrations
// meet it.

// Window is how long the two clients of a duplicate have to prove: what
// every server gives them, so a protocol rule, not a tunable.
const Window = 3 * time.Second

// Registrations is what the handlers read of a primary's registrations.
type Registrations interface {
	// From is the peer that registered key here.
	From(key [32]byte) (peer.ID, bool)
	// RegisteredBy reports whether p registered here.
	RegisteredBy(p peer.ID) bool
}

// Ep is an epoch as the handlers see it: its final view (nil before the
// final descriptor), this server's chain position, its duplicate, its
// registrations here, and the host's own handle of it.
type Ep struct {
	V     *proto.View
	Pos   int
	Abort *Abort
	Reg   Registrations
	Ref   any
}

// Host is what the handlers ask of the server they run in. The methods
// marked "locked" are called under the server's lock (in Locked or in
// WaitFor's conditions); the others take what they need themselves.
type Host interface {
	Self() peer.ID
	Priv() crypto.PrivKey
	Rand() io.Reader
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	// Each sends r to every peer at once.
	Each(ctx context.Context, peers []peer.ID, r transport.Request) ([][]byte, error)
	// WaitFor blocks until cond, evaluated under the server's lock,
	// holds or ctx ends.
	WaitFor(ctx context.Context, cond func() bool) error
	// Locked runs f under the server's lock.
	Locked(f func())
	// Epoch is the epoch id here, or nil (locked).
	Epoch(id [32]byte) *Ep
	// Ended reports whether ep ended here (locked).
	Ended(ep *Ep) bool
	// SetupDone reports whether ep's setup completed here (locked).
	SetupDone(ep *Ep) bool
	// Secret is this server's step secret of ep, nil once erased (locked).
	Secret(ep *Ep) *mix.StepSecret
	// Notify wakes the server's waiters (locked).
	Notify()
	// End ends ep for a fault, EndQuiet once its blame is settled (locked).
	End(ep *Ep, reason string)
	EndQuiet(ep *Ep, reason string)
	// LeaveOut leaves client peer p out of epoch number, without a
	// strike (locked).
	LeaveOut(p peer.ID, number uint64)
	// Steps are ep's setup steps and the inputs of each, which the
	// routes are checked against; set before a walk starts.
	Steps(ep *Ep) (inputs [][][]group.Ciphertext, steps []*mix.StepResult)
	// Name names the client of ep's slot with the evidence.
	Name(ep *Ep, slot int, why string, evidence [][]byte)
}

// Service is a duplicate share's handlers at one server: the fault found
// at setup (Fault), the verdict (Verdict), the routes served (OnRoute),
// the chain's signatures of the abort (OnAbort), a client's wait for it
// (OnQuery) and the two clients' proofs (OnProof). No lock is held
// across a call to a peer.
type Service struct {
	H   Host
	Log *slog.Logger
	// Ctx is the server's life: the abort's broadcast runs in it.
	Ctx context.Context
	// RouteWait is how long a route is asked of a server that has not
	// verified the step showing the fault yet.
	RouteWait time.Duration
}

// WalkOf returns ep's walk, made at its first use.
func (s *Service) WalkOf(ep *Ep) *Walk {
	return ep.Abort.Walk(func() *Walk { return &Walk{Pos: ep.Pos, P: prover{s, ep}} })
}

// prover is what ep's walk asks of the server.
type prover struct {
	s  *Service
	ep *Ep
}

// Own proves this server's route from its output out with its step
// secret.
func (p prover) Own(out int) (Step, error) {
	h, e := p.s.H, p.ep
	var sec *mix.StepSecret
	h.Locked(func() { sec = h.Secret(e) })
	if sec == nil {
		return Step{}, errors.New("node: step secret gone before the walk")
	}
	v, t := e.V, e.Pos
	inputs, steps := h.Steps(e)
	in, proof, err := sec.ProveRoute(mix.EpochID(v.ID), v.ServerKeys, inputs[t], steps[t], out, h.Rand())
	if err != nil {
		return Step{}, fmt.Errorf("node: route proof of server %d at output %d: %w", t, out, err)
	}
	return Step{In: in, Proof: proof}, nil
}

// Ask asks server t for its route from output out.
func (p prover) Ask(ctx context.Context, t, out int) (Step, error) {
	v := p.ep.V
	req := wire.Route{Epoch: v.ID, S: uint16(t), Out: uint32(out)}
	// Server t may not have verified the step that shows the fault
	// yet (it refuses a walk it has not seen): ask again for a while.
	rctx, cancel := context.WithTimeout(ctx, p.s.RouteWait)
	defer cancel()
	var rep []byte
	var err error
	for {
		rep, err = p.s.H.Call(rctx, v.Chain[t], transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeRoute, Body: req.Marshal(), Timeout: transport.ShortTimeout})
		if err == nil || rctx.Err() != nil {
			break
		}
		select {
		case <-rctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return Step{}, fmt.Errorf("node: route of server %d: %w", t, err)
	}
	var rt wire.Route
	if err := rt.Unmarshal(rep); err != nil || rt.Epoch != v.ID || int(rt.S) != t || int(rt.Out) != out {
		return Step{}, fmt.Errorf("node: route reply of server %d malformed: %v", t, err)
	}
	return Step{In: int(rt.In), Proof: rt.Proof}, nil
}

// Verify checks server t's route against its published setup step.
func (p prover) Verify(t, out int, st Step) error {
	v := p.ep.V
	inputs, steps := p.s.H.Steps(p.ep)
	return mix.VerifyRoute(mix.EpochID(v.ID), t, v.ServerKeys, inputs[t], steps[t], out, st.In, st.Proof)
}

// OnRoute answers a route request of a duplicate's walk: only for an
// output that one of the two walks reaches at this server.
func (s *Service) OnRoute(ctx context.Context, ep *Ep, se *mix.ShareError, req wire.Route) (wire.Type, []byte, error) {
	t0 := blame.DupWalkStart(se, len(ep.V.Chain))
	st, err := s.WalkOf(ep).Serve(ctx, t0, [2]int{se.Duplicate, se.Position}, int(req.Out))
	if err != nil {
		return 0, nil, err
	}
	req.In, req.Proof = uint32(st.In), st.Proof
	return wire.TypeRoute, req.Marshal(), nil
}

// Fault settles a duplicate U or P (se.Duplicate ≥ 0) found at setup.
func (s *Service) Fault(ctx context.Context, ep *Ep, se *mix.ShareError) {
	h, v := s.H, ep.V
	m := len(v.Chain)
	t0 := blame.DupWalkStart(se, m)
	var slots [2]int
	for i, p := range []int{se.Duplicate, se.Position} {
		slots[i] = p
		if t0 >= 0 {
			var err error
			if slots[i], err = s.WalkOf(ep).RouteAt(ctx, 0, t0, p); err != nil {
				s.Log.Warn("setup duplicate share: walk failed", "err", err)
				h.Locked(func() { h.End(ep, "setup duplicate share; walk failed") })
				return
			}
		}
	}
	_, steps := h.Steps(ep)
	var value *group.Element
	comp := se.Server
	if se.Pseudonym {
		value, comp = steps[m-1].Pseudonyms()[se.Position], m
	} else {
		value = steps[se.Server].U[se.Position]
	}
	a := wire.DupAbort{Epoch: v.ID, S: uint16(se.Server), Comp: uint16(comp), SlotA: uint32(slots[0]), SlotB: uint32(slots[1]), Sigs: make([][64]byte, m)}
	copy(a.Value[:], value.Bytes())
	d := proto.DupDigest(&a)
	sig, err := proto.Sign(h.Priv(), d)
	if err != nil {
		h.Locked(func() { h.End(ep, "setup duplicate share; signing failed") })
		return
	}
	a.Sigs[ep.Pos] = sig
	h.Locked(func() {
		ep.Abort.Start(a, value, v.Chain)
		h.Notify() // the clients' waits end: setup will not complete
	})
	s.Log.Warn("setup aborted: a client's share repeats; both positions walked back, the two clients are asked to prove")
	own := wire.DupAbort{Epoch: a.Epoch, S: a.S, Comp: a.Comp, Value: a.Value, SlotA: a.SlotA, SlotB: a.SlotB, Sigs: make([][64]byte, m)}
	own.Sigs[ep.Pos] = sig
	others := s.others(v.Chain)
	go func() {
		bctx, cancel := context.WithTimeout(s.Ctx, Window)
		defer cancel()
		_, _ = h.Each(bctx, others, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeDupAbort, Body: own.Marshal(), Timeout: transport.ShortTimeout})
	}()
	// The clients' deadline runs from the moment the abort carries every
	// server's signature (what a client waits for), or from a first
	// window's end if a signature never comes.
	sctx, scancel := context.WithTimeout(ctx, Window)
	_ = h.WaitFor(sctx, ep.Abort.Signed)
	scancel()
	wctx, cancel := context.WithTimeout(ctx, Window)
	<-wctx.Done()
	cancel()
	s.Verdict(ep)
}

// others are the chain's peers but this server.
func (s *Service) others(chain []peer.ID) []peer.ID {
	var out []peer.ID
	for _, p := range chain {
		if p != s.H.Self() {
			out = append(out, p)
		}
	}
	return out
}

// Verdict applies the rules (blame.Dup.Verdict) to what was proven by
// the deadline. Every server names the culprits (log, store record, §8
// "After a blame"); the primary of a slot, the only one that knows its
// peer, excludes it (a culprit with a strike, a silent client for the
// next epoch only). Call without the host's lock.
func (s *Service) Verdict(ep *Ep) {
	h := s.H
	var named []blame.DupCulprit
	var evidence [][]byte
	h.Locked(func() {
		var silent []uint32
		named, silent, evidence = ep.Abort.Verdict()
		num := ep.V.Desc.Number
		for _, slot := range silent {
			c := ep.V.Desc.Clients[slot]
			if from, ok := ep.Reg.From(c.RegKey); ok && int(c.Primary) == ep.Pos {
				h.LeaveOut(from, num+1)
			}
		}
	})
	for _, c := range named {
		h.Name(ep, int(c.Slot), c.Why, evidence)
	}
	h.Locked(func() {
		if len(named) > 0 {
			h.EndQuiet(ep, "setup share fault: client excluded")
			return
		}
		s.Log.Warn("setup duplicate share settled: nobody named; a silent client is left out of the next epoch")
		h.EndQuiet(ep, "setup duplicate share: nobody named")
	})
}

// OnAbort takes another chain server's signature of the abort.
func (s *Service) OnAbort(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var a wire.DupAbort
	if err := a.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var err error
	s.H.Locked(func() {
		ep := s.H.Epoch(a.Epoch)
		if ep == nil || ep.V == nil || len(a.Sigs) != len(ep.V.Chain) {
			err = errors.New("node: duplicate abort of an unknown epoch")
			return
		}
		j := -1
		for i, p := range ep.V.Chain {
			if p == from {
				j = i
			}
		}
		if j < 0 || j == ep.Pos {
			err = errors.New("node: duplicate abort from outside the chain")
			return
		}
		// Before this server's own walk reached its abort, the
		// signature is kept (one a server) to check against it then.
		if err = ep.Abort.Sign(j, from, a.Sigs[j], s.H.Ended(ep)); err != nil {
			return
		}
		s.H.Notify()
	})
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeAck, []byte{}, nil
}

// OnQuery answers a client registered here with the abort once every
// chain server has signed it (or refuses once the verdict is in).
func (s *Service) OnQuery(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	if err := ref.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var ep *Ep
	mine := false
	s.H.Locked(func() {
		ep = s.H.Epoch(ref.Epoch)
		mine = ep != nil && ep.Reg.RegisteredBy(from)
	})
	if !mine {
		return 0, nil, errors.New("node: no epoch of this client here")
	}
	var out []byte
	err := s.H.WaitFor(ctx, func() bool {
		var over bool
		out, over = ep.Abort.Query(s.H.Ended(ep), s.H.SetupDone(ep))
		return over
	})
	if err != nil {
		return 0, nil, err
	}
	if out == nil {
		return 0, nil, errors.New("node: no duplicate-share abort in this epoch")
	}
	return wire.TypeDupAbort, out, nil
}

// OnProof takes a share proof: from a client registered here for its own
// slot (then forwarded to every chain server), or from the primary of the
// slot. Every server verifies it itself.
func (s *Service) OnProof(ctx context.Context, from peer.ID, body []byte, fromClient bool) (wire.Type, []byte, error) {
	var p wire.DupProof
	if err := p.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var ep *Ep
	var value *group.Element
	var comp int
	var ok, answered bool
	var err error
	s.H.Locked(func() {
		if ep = s.H.Epoch(p.Epoch); ep == nil {
			err = errors.New("node: no open duplicate-share abort of this epoch")
			return
		}
		if value, comp, answered, err = ep.Abort.Open(p.Slot); err != nil {
			return
		}
		c := ep.V.Desc.Clients[p.Slot]
		if fromClient {
			q, known := ep.Reg.From(c.RegKey)
			ok = int(c.Primary) == ep.Pos && known && q == from
		} else {
			ok = ep.V.Chain[c.Primary] == from
		}
	})
	if err != nil {
		return 0, nil, err
	}
	if !ok || answered {
		if ok {
			return wire.TypeAck, []byte{}, nil // one answer a slot
		}
		return 0, nil, errors.New("node: share proof from a peer that does not serve the slot")
	}
	verr := mix.VerifyShare(mix.EpochID(p.Epoch), p.Slot, comp, value, p.Proof[:])
	ep.Abort.Answer(p.Slot, verr == nil, body)
	if fromClient {
		fctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
		defer cancel()
		_, _ = s.H.Each(fctx, s.others(ep.V.Chain), transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeDupProof, Body: body, Timeout: transport.ShortTimeout})
	}
	return wire.TypeAck, []byte{}, nil
}
