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
)

// A duplicate U or P at setup (docs/protocol.md §4.1 v3): the value
// repeats at two positions of one proven list, and nothing in the lists
// says which of the two clients copied the other (a malicious S_0 can
// decrypt an honest client's U_{i,0} and have an accomplice register it).
// Every server walks BOTH positions back to their slots with the route
// proofs of §8 step 1, signs an abort naming the value and the two slots,
// and gives the two clients dupWindow to prove knowledge of the value's
// discrete log (mix.ProveShare). Then, at every server:
//
//   - a client whose proof verifies is honest unless the other proves too
//     (two clients that know one discrete log act together: both are
//     culprits);
//   - a client that answers with a proof that does not verify is a
//     culprit (an honest client answers only when it holds the value);
//   - a client silent past the deadline is only left out of the next
//     epoch, with no strike (a network adversary could have cut it off).
//
// The epoch ends when the verdict is in, so that the next epoch's
// registrations meet it.

// dupWindow is how long the two clients of a duplicate have to prove: what
// every server gives them, so a protocol rule, not a Tunables field.
const dupWindow = 3 * time.Second

// dupState is an epoch's duplicate-share abort. Guarded by Server.mu.
type dupState struct {
	abort  wire.DupAbort // Sigs: one per chain server, zero until seen
	value  *group.Element
	proved map[uint32]bool   // slot → its proof verified
	failed map[uint32]bool   // slot → it answered with a proof that fails
	proofs map[uint32][]byte // slot → its DupProof, evidence for the record
	done   bool              // verdict taken
}

// dupEpoch is the per-epoch part: the abort, signatures that arrived
// before this server's own walk reached them, and the routes walked.
type dupEpoch struct {
	dup      *dupState
	dupEarly map[int][64]byte
	dupRoute map[[2]int]dupStep // (server t, output position) → step
}

type dupStep struct {
	in    int
	proof []byte
}

// dupServer is the server-wide part: peers left out of the next epoch
// without a strike (docs/protocol.md §4.1).
type dupServer struct {
	leftOut map[peer.ID]uint64
}

// dupRouteAt returns the input position at server t on the walk that
// starts from output out0 of server t0 (t ≤ t0), establishing and
// checking every step from t0 down first (§8 v2: strictly sequential).
func (s *Server) dupRouteAt(ctx context.Context, e *sepoch, t, t0, out0 int) (int, error) {
	out := out0
	if t < t0 {
		var err error
		if out, err = s.dupRouteAt(ctx, e, t+1, t0, out0); err != nil {
			return 0, err
		}
	}
	st, err := s.dupStepAt(ctx, e, t, out)
	return st.in, err
}

// dupStepAt is server t's route from its output out, proven by t (this
// server's own from its step secret) and checked against the published
// setup step; remembered, so that each route is proven once.
func (s *Server) dupStepAt(ctx context.Context, e *sepoch, t, out int) (dupStep, error) {
	key := [2]int{t, out}
	s.mu.Lock()
	st, ok := e.dupRoute[key]
	sec := e.sec
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	v := e.final
	id := mix.EpochID(v.ID)
	if t == e.pos {
		if sec == nil {
			return st, errors.New("node: step secret gone before the walk")
		}
		in, proof, err := sec.ProveRoute(id, v.ServerKeys, e.stepInputs[t], e.steps[t], out, s.rand)
		if err != nil {
			return st, fmt.Errorf("node: route proof of server %d at output %d: %w", t, out, err)
		}
		st = dupStep{in, proof}
	} else {
		req := wire.Route{Epoch: v.ID, S: uint16(t), Out: uint32(out)}
		// Server t may not have verified the step that shows the fault
		// yet (it refuses a walk it has not seen): ask again for a while.
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.DupRouteWait)
		defer cancel()
		var rep []byte
		var err error
		for {
			rep, err = call(rctx, s.h, v.Chain[t], request{Proto: ProtoEpoch, Type: wire.TypeRoute, Body: req.Marshal(), Timeout: shortTimeout})
			if err == nil || rctx.Err() != nil {
				break
			}
			select {
			case <-rctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err != nil {
			return st, fmt.Errorf("node: route of server %d: %w", t, err)
		}
		var rt wire.Route
		if err := rt.Unmarshal(rep); err != nil || rt.Epoch != v.ID || int(rt.S) != t || int(rt.Out) != out {
			return st, fmt.Errorf("node: route reply of server %d malformed: %v", t, err)
		}
		st = dupStep{int(rt.In), rt.Proof}
	}
	if err := mix.VerifyRoute(id, t, v.ServerKeys, e.stepInputs[t], e.steps[t], out, st.in, st.proof); err != nil {
		return st, fmt.Errorf("node: route of server %d from output %d does not verify (server %d is the culprit): %w", t, out, t, err)
	}
	s.mu.Lock()
	if e.dupRoute == nil {
		e.dupRoute = map[[2]int]dupStep{}
	}
	e.dupRoute[key] = st
	s.mu.Unlock()
	return st, nil
}

// onDupRoute answers a route request of a duplicate's walk: only for an
// output that one of the two walks reaches at this server.
func (s *Server) onDupRoute(ctx context.Context, e *sepoch, se *mix.ShareError, req wire.Route) (wire.Type, []byte, error) {
	t0 := blame.DupWalkStart(se, len(e.final.Chain))
	if e.pos > t0 {
		return 0, nil, errors.New("node: this server is not on the walk")
	}
	for _, start := range []int{se.Duplicate, se.Position} {
		out := start
		if e.pos < t0 {
			var err error
			if out, err = s.dupRouteAt(ctx, e, e.pos+1, t0, start); err != nil {
				return 0, nil, err
			}
		}
		if out != int(req.Out) {
			continue
		}
		st, err := s.dupStepAt(ctx, e, e.pos, out)
		if err != nil {
			return 0, nil, err
		}
		req.In, req.Proof = uint32(st.in), st.proof
		return wire.TypeRoute, req.Marshal(), nil
	}
	return 0, nil, fmt.Errorf("node: route asked for output %d, which neither walk reaches here", req.Out)
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
			if slots[i], err = s.dupRouteAt(ctx, e, 0, t0, p); err != nil {
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
	d := dupDigest(&a)
	sig, err := sign(s.priv, d)
	if err != nil {
		s.mu.Lock()
		s.end(e, "setup duplicate share; signing failed")
		s.mu.Unlock()
		return
	}
	a.Sigs[e.pos] = sig
	s.mu.Lock()
	e.dup = &dupState{abort: a, value: value, proved: map[uint32]bool{}, failed: map[uint32]bool{}}
	for j, sg := range e.dupEarly {
		if verifyPeerSig(v.Chain[j], d, sg) == nil {
			e.dup.abort.Sigs[j] = sg
		}
	}
	e.dupEarly = nil
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
		_, _ = s.each(bctx, others, request{Proto: ProtoEpoch, Type: wire.TypeDupAbort, Body: own.Marshal(), Timeout: shortTimeout})
	}()
	// The clients' deadline runs from the moment the abort carries every
	// server's signature (what a client waits for), or from a first
	// window's end if a signature never comes.
	sctx, scancel := context.WithTimeout(ctx, dupWindow)
	_ = s.waitFor(sctx, func() bool {
		for _, sg := range e.dup.abort.Sigs {
			if sg == [64]byte{} {
				return false
			}
		}
		return true
	})
	scancel()
	wctx, cancel := context.WithTimeout(ctx, dupWindow)
	<-wctx.Done()
	cancel()
	s.dupVerdict(e)
}

// dupVerdict applies the rules to what was proven by the deadline. Every
// server names the culprits (log, store record, §8 "After a blame"); the
// primary of a slot, the only one that knows its peer, excludes it (a
// culprit with a strike, a silent client for the next epoch only). Call
// without s.mu.
func (s *Server) dupVerdict(e *sepoch) {
	s.mu.Lock()
	ds := e.dup
	ds.done = true
	a, b := ds.abort.SlotA, ds.abort.SlotB
	num := e.final.Desc.Number
	evidence := [][]byte{ds.abort.Marshal()}
	var culprits []*culprit
	for _, p := range [][2]uint32{{a, b}, {b, a}} {
		slot, other := p[0], p[1]
		switch {
		case ds.failed[slot]:
			culprits = append(culprits, &culprit{server: -1, slot: int(slot), why: "setup: its share repeats another and its proof of knowledge does not verify"})
		case ds.proved[slot] && ds.proved[other]:
			culprits = append(culprits, &culprit{server: -1, slot: int(slot), why: "setup: it and another client both know the discrete log of one repeated share"})
		case !ds.proved[slot]:
			// Silent: left out of the retry, no strike.
			c := e.final.Desc.Clients[slot]
			if from, ok := e.RegFrom[c.RegKey]; ok && int(c.Primary) == e.pos {
				if s.leftOut == nil {
					s.leftOut = map[peer.ID]uint64{}
				}
				s.leftOut[from] = num + 1
			}
		}
		if pr, ok := ds.proofs[slot]; ok {
			evidence = append(evidence, pr)
		}
	}
	s.mu.Unlock()
	for _, c := range culprits {
		s.name(e, 0, c, evidence)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(culprits) > 0 {
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
	if e.dup == nil {
		// This server's own walk has not reached its abort yet: keep
		// the signature (one per server) to check against it then.
		if e.ended {
			return 0, nil, errors.New("node: duplicate abort of an ended epoch")
		}
		if e.dupEarly == nil {
			e.dupEarly = map[int][64]byte{}
		}
		e.dupEarly[j] = a.Sigs[j]
		return wire.TypeAck, ack, nil
	}
	st := e.dup.abort
	st.Sigs = nil
	if err := verifyPeerSig(from, dupDigest(&st), a.Sigs[j]); err != nil {
		return 0, nil, fmt.Errorf("node: duplicate abort of server %d does not match this server's: %w", j, err)
	}
	e.dup.abort.Sigs[j] = a.Sigs[j]
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
	mine := e != nil && e.Table.RegisteredBy(from)
	s.mu.Unlock()
	if !mine {
		return 0, nil, errors.New("node: no epoch of this client here")
	}
	var out []byte
	err := s.waitFor(ctx, func() bool {
		if e.dup == nil {
			return e.ended || e.setupDone
		}
		complete := true
		for _, sg := range e.dup.abort.Sigs {
			complete = complete && sg != [64]byte{}
		}
		if complete {
			out = e.dup.abort.Marshal()
		}
		return complete || e.dup.done
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
	if e == nil || e.dup == nil || e.dup.done {
		s.mu.Unlock()
		return 0, nil, errors.New("node: no open duplicate-share abort of this epoch")
	}
	ds := e.dup
	if p.Slot != ds.abort.SlotA && p.Slot != ds.abort.SlotB {
		s.mu.Unlock()
		return 0, nil, errors.New("node: share proof for a slot the abort does not name")
	}
	c := e.final.Desc.Clients[p.Slot]
	ok := false
	if fromClient {
		q, known := e.RegFrom[c.RegKey]
		ok = int(c.Primary) == e.pos && known && q == from
	} else {
		ok = e.final.Chain[c.Primary] == from
	}
	if !ok || ds.proved[p.Slot] || ds.failed[p.Slot] {
		s.mu.Unlock()
		if ok {
			return wire.TypeAck, ack, nil // one answer a slot
		}
		return 0, nil, errors.New("node: share proof from a peer that does not serve the slot")
	}
	value, comp := ds.value, int(ds.abort.Comp)
	s.mu.Unlock()
	verr := mix.VerifyShare(mix.EpochID(p.Epoch), p.Slot, comp, value, p.Proof[:])
	s.mu.Lock()
	if !ds.done && !ds.proved[p.Slot] && !ds.failed[p.Slot] {
		if verr == nil {
			ds.proved[p.Slot] = true
		} else {
			ds.failed[p.Slot] = true
		}
		if ds.proofs == nil {
			ds.proofs = map[uint32][]byte{}
		}
		ds.proofs[p.Slot] = append([]byte(nil), body...)
	}
	chain := e.final.Chain
	s.mu.Unlock()
	if fromClient {
		var others []peer.ID
		for _, q := range chain {
			if q != s.h.ID() {
				others = append(others, q)
			}
		}
		fctx, cancel := context.WithTimeout(ctx, shortTimeout)
		defer cancel()
		_, _ = s.each(fctx, others, request{Proto: ProtoEpoch, Type: wire.TypeDupProof, Body: body, Timeout: shortTimeout})
	}
	return wire.TypeAck, ack, nil
}

// dupAdmit refuses a peer left out of this epoch after a duplicate it did
// not answer. Call with s.mu held.
func (s *Server) dupAdmit(e *sepoch, from peer.ID) error {
	if until, ok := s.leftOut[from]; ok && e.v.Desc.Number <= until {
		return errors.New("node: this client is left out of this epoch (it did not answer for a repeated share)")
	}
	return nil
}
