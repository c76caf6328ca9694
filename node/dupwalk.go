package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/dupwalk"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A duplicate U or P at setup (docs/protocol.md §4.1 v3): every server
// walks BOTH positions back to their slots with the route proofs of §8
// step 1, signs an abort naming the value and the two slots, and gives
// the two clients dupWindow to prove knowledge of the value's discrete
// log (mix.ProveShare); the verdict's rules are blame.Dup's. The epoch
// ends when the verdict is in, so that the next epoch's registrations
// meet it.

// dupWindow is how long the two clients of a duplicate have to prove: what
// every server gives them, so a protocol rule, not a Tunables field.
const dupWindow = 3 * time.Second

// dupServer is the server-wide part: peers left out of the next epoch
// without a strike (docs/protocol.md §4.1).
type dupServer struct {
	leftOut blame.LeftOut
}

// dupWalkOf returns e's walk, made at its first use.
func dupWalkOf(s *Server, e *sepoch) *dupwalk.Walk {
	return e.dup.Walk(func() *dupwalk.Walk { return &dupwalk.Walk{Pos: e.pos, P: dupProver{s, e}} })
}

// dupProver is what e's walk asks of the server.
type dupProver struct {
	s *Server
	e *sepoch
}

// Own proves this server's route from its output out with its step
// secret.
func (p dupProver) Own(out int) (dupwalk.Step, error) {
	s, e := p.s, p.e
	s.mu.Lock()
	sec := e.sec
	s.mu.Unlock()
	if sec == nil {
		return dupwalk.Step{}, errors.New("node: step secret gone before the walk")
	}
	v, t := e.final, e.pos
	in, proof, err := sec.ProveRoute(mix.EpochID(v.ID), v.ServerKeys, e.stepInputs[t], e.steps[t], out, s.rand)
	if err != nil {
		return dupwalk.Step{}, fmt.Errorf("node: route proof of server %d at output %d: %w", t, out, err)
	}
	return dupwalk.Step{In: in, Proof: proof}, nil
}

// Ask asks server t for its route from output out.
func (p dupProver) Ask(ctx context.Context, t, out int) (dupwalk.Step, error) {
	s, v := p.s, p.e.final
	req := wire.Route{Epoch: v.ID, S: uint16(t), Out: uint32(out)}
	// Server t may not have verified the step that shows the fault
	// yet (it refuses a walk it has not seen): ask again for a while.
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.DupRouteWait)
	defer cancel()
	var rep []byte
	var err error
	for {
		rep, err = transport.Call(rctx, s.h, v.Chain[t], transport.Request{Proto: ProtoEpoch, Type: wire.TypeRoute, Body: req.Marshal(), Timeout: transport.ShortTimeout})
		if err == nil || rctx.Err() != nil {
			break
		}
		select {
		case <-rctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return dupwalk.Step{}, fmt.Errorf("node: route of server %d: %w", t, err)
	}
	var rt wire.Route
	if err := rt.Unmarshal(rep); err != nil || rt.Epoch != v.ID || int(rt.S) != t || int(rt.Out) != out {
		return dupwalk.Step{}, fmt.Errorf("node: route reply of server %d malformed: %v", t, err)
	}
	return dupwalk.Step{In: int(rt.In), Proof: rt.Proof}, nil
}

// Verify checks server t's route against its published setup step.
func (p dupProver) Verify(t, out int, st dupwalk.Step) error {
	e := p.e
	v := e.final
	return mix.VerifyRoute(mix.EpochID(v.ID), t, v.ServerKeys, e.stepInputs[t], e.steps[t], out, st.In, st.Proof)
}

// onDupRoute answers a route request of a duplicate's walk: only for an
// output that one of the two walks reaches at this server.
func (s *Server) onDupRoute(ctx context.Context, e *sepoch, se *mix.ShareError, req wire.Route) (wire.Type, []byte, error) {
	t0 := blame.DupWalkStart(se, len(e.final.Chain))
	st, err := dupWalkOf(s, e).Serve(ctx, t0, [2]int{se.Duplicate, se.Position}, int(req.Out))
	if err != nil {
		return 0, nil, err
	}
	req.In, req.Proof = uint32(st.In), st.Proof
	return wire.TypeRoute, req.Marshal(), nil
}

// dupFault settles a duplicate U or P (se.Duplicate ≥ 0) found at setup.
func (s *Server) dupFault(ctx context.Context, e *sepoch, se *mix.ShareError) {
	v := e.final
	m := len(v.Chain)
	t0 := blame.DupWalkStart(se, m)
	var slots [2]int
	for i, p := range []int{se.Duplicate, se.Position} {
		slots[i] = p
		if t0 >= 0 {
			var err error
			if slots[i], err = dupWalkOf(s, e).RouteAt(ctx, 0, t0, p); err != nil {
				s.log.Warn("setup duplicate share: walk failed", "err", err)
				s.mu.Lock()
				s.end(e, "setup duplicate share; walk failed")
				s.mu.Unlock()
				return
			}
		}
	}
	var value *group.Element
	comp := se.Server
	if se.Pseudonym {
		value, comp = e.steps[m-1].Pseudonyms()[se.Position], m
	} else {
		value = e.steps[se.Server].U[se.Position]
	}
	a := wire.DupAbort{Epoch: v.ID, S: uint16(se.Server), Comp: uint16(comp), SlotA: uint32(slots[0]), SlotB: uint32(slots[1]), Sigs: make([][64]byte, m)}
	copy(a.Value[:], value.Bytes())
	d := proto.DupDigest(&a)
	sig, err := proto.Sign(s.priv, d)
	if err != nil {
		s.mu.Lock()
		s.end(e, "setup duplicate share; signing failed")
		s.mu.Unlock()
		return
	}
	a.Sigs[e.pos] = sig
	s.mu.Lock()
	e.dup.Start(a, value, v.Chain)
	s.notify() // the clients' waits end: setup will not complete
	s.mu.Unlock()
	s.log.Warn("setup aborted: a client's share repeats; both positions walked back, the two clients are asked to prove")
	own := wire.DupAbort{Epoch: a.Epoch, S: a.S, Comp: a.Comp, Value: a.Value, SlotA: a.SlotA, SlotB: a.SlotB, Sigs: make([][64]byte, m)}
	own.Sigs[e.pos] = sig
	var others []peer.ID
	for _, p := range v.Chain {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	go func() {
		bctx, cancel := context.WithTimeout(s.ctx, dupWindow)
		defer cancel()
		_, _ = s.each(bctx, others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeDupAbort, Body: own.Marshal(), Timeout: transport.ShortTimeout})
	}()
	// The clients' deadline runs from the moment the abort carries every
	// server's signature (what a client waits for), or from a first
	// window's end if a signature never comes.
	sctx, scancel := context.WithTimeout(ctx, dupWindow)
	_ = s.waitFor(sctx, e.dup.Signed)
	scancel()
	wctx, cancel := context.WithTimeout(ctx, dupWindow)
	<-wctx.Done()
	cancel()
	s.dupVerdict(e)
}

// dupVerdict applies the rules (blame.Dup.Verdict) to what was proven by
// the deadline. Every server names the culprits (log, store record, §8
// "After a blame"); the primary of a slot, the only one that knows its
// peer, excludes it (a culprit with a strike, a silent client for the
// next epoch only). Call without s.mu.
func (s *Server) dupVerdict(e *sepoch) {
	s.mu.Lock()
	named, silent, evidence := e.dup.Verdict()
	num := e.final.Desc.Number
	for _, slot := range silent {
		c := e.final.Desc.Clients[slot]
		if from, ok := e.reg.From(c.RegKey); ok && int(c.Primary) == e.pos {
			if s.leftOut == nil {
				s.leftOut = blame.LeftOut{}
			}
			s.leftOut.Leave(from, num+1)
		}
	}
	s.mu.Unlock()
	for _, c := range named {
		s.name(e, 0, &culprit{server: -1, slot: int(c.Slot), why: c.Why}, evidence)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(named) > 0 {
		s.endQuiet(e, "setup share fault: client excluded")
		return
	}
	s.log.Warn("setup duplicate share settled: nobody named; a silent client is left out of the next epoch")
	s.endQuiet(e, "setup duplicate share: nobody named")
}

// onDupAbort takes another chain server's signature of the abort.
func (s *Server) onDupAbort(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var a wire.DupAbort
	if err := a.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[a.Epoch]
	if e == nil || e.final == nil || len(a.Sigs) != len(e.final.Chain) {
		return 0, nil, errors.New("node: duplicate abort of an unknown epoch")
	}
	j := -1
	for i, p := range e.final.Chain {
		if p == from {
			j = i
		}
	}
	if j < 0 || j == e.pos {
		return 0, nil, errors.New("node: duplicate abort from outside the chain")
	}
	// Before this server's own walk reached its abort, the signature
	// is kept (one a server) to check against it then.
	if err := e.dup.Sign(j, from, a.Sigs[j], e.ended); err != nil {
		return 0, nil, err
	}
	s.notify()
	return wire.TypeAck, ack, nil
}

// onDupQuery answers a client registered here with the abort once every
// chain server has signed it (or refuses once the verdict is in).
func (s *Server) onDupQuery(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	if err := ref.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	e := s.epochs[ref.Epoch]
	mine := e != nil && e.reg.RegisteredBy(from)
	s.mu.Unlock()
	if !mine {
		return 0, nil, errors.New("node: no epoch of this client here")
	}
	var out []byte
	err := s.waitFor(ctx, func() bool {
		var over bool
		out, over = e.dup.Query(e.ended, e.setupDone)
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

// onDupProof takes a share proof: from a client registered here for its
// own slot (then forwarded to every chain server), or from the primary of
// the slot. Every server verifies it itself.
func (s *Server) onDupProof(ctx context.Context, from peer.ID, body []byte, fromClient bool) (wire.Type, []byte, error) {
	var p wire.DupProof
	if err := p.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	e := s.epochs[p.Epoch]
	if e == nil {
		s.mu.Unlock()
		return 0, nil, errors.New("node: no open duplicate-share abort of this epoch")
	}
	value, comp, answered, err := e.dup.Open(p.Slot)
	if err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	c := e.final.Desc.Clients[p.Slot]
	ok := false
	if fromClient {
		q, known := e.reg.From(c.RegKey)
		ok = int(c.Primary) == e.pos && known && q == from
	} else {
		ok = e.final.Chain[c.Primary] == from
	}
	if !ok || answered {
		s.mu.Unlock()
		if ok {
			return wire.TypeAck, ack, nil // one answer a slot
		}
		return 0, nil, errors.New("node: share proof from a peer that does not serve the slot")
	}
	s.mu.Unlock()
	verr := mix.VerifyShare(mix.EpochID(p.Epoch), p.Slot, comp, value, p.Proof[:])
	e.dup.Answer(p.Slot, verr == nil, body)
	chain := e.final.Chain
	if fromClient {
		var others []peer.ID
		for _, q := range chain {
			if q != s.h.ID() {
				others = append(others, q)
			}
		}
		fctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
		defer cancel()
		_, _ = s.each(fctx, others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeDupProof, Body: body, Timeout: transport.ShortTimeout})
	}
	return wire.TypeAck, ack, nil
}

// dupAdmit refuses a peer left out of this epoch after a duplicate it did
// not answer. Call with s.mu held.
func (s *Server) dupAdmit(e *sepoch, from peer.ID) error {
	return s.leftOut.Admit(from, e.v.Desc.Number)
}
