package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/internal/setupstep"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
)

// settingUp is this server's part of one epoch's setup (§4.2): the epoch
// and the setup's deadline (set by run). Its steps are its methods; the
// epoch's state is the server's (sepoch, under Server.mu).
type settingUp struct {
	host  setupHost
	mu    *sync.Mutex
	base  context.Context // the server's
	rand  io.Reader
	priv  crypto.PrivKey
	self  peer.ID
	log   *slog.Logger
	pool  *transport.BufPool
	hooks hookSrc
	e     *sepoch
	ctx   context.Context
}

// setupHost is what the setup takes from the rest of the server.
type setupHost interface {
	waitFor(ctx context.Context, cond func() bool) error
	each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error)
	shareFault(ctx context.Context, e *sepoch, se *mix.ShareError)
	name(e *sepoch, round uint32, c *roundblame.Culprit, evidence [][]byte)
	// Under mu.
	end(e *sepoch, reason string)
	notify()
}

// newSettingUp is this server's part of e's setup.
func newSettingUp(s *Server, e *sepoch) *settingUp {
	return &settingUp{host: s, mu: &s.mu, base: s.ctx, rand: s.rand, priv: s.priv, self: s.h.ID(), log: s.log, pool: &s.pool,
		hooks: newHookSrc(s), e: e}
}

// run runs the setup in chain order: verify every earlier step, compute
// and broadcast its own, verify every later one.
func (u *settingUp) run() {
	ctx, cancel := context.WithTimeout(u.base, transport.BulkTimeout*2)
	defer cancel()
	u.ctx = ctx
	e := u.e
	fail := func(err error) {
		u.log.Warn("setup failed", "err", err)
		u.mu.Lock()
		u.host.end(e, "setup failed")
		u.mu.Unlock()
	}
	u.mu.Lock()
	ok := e.acquire()
	parsed := e.reg.Parsed()
	u.mu.Unlock()
	if !ok {
		return
	}
	defer func() {
		u.mu.Lock()
		e.release()
		u.mu.Unlock()
	}()
	v := e.final
	m, n := len(v.Chain), len(v.Desc.Clients)
	inputs := mix.InitialVectors(parsed)
	for k := 0; k < m; k++ {
		var res *mix.StepResult
		var shareErr *mix.ShareError
		var err error
		if k == e.pos {
			res, shareErr, err = u.own(k, inputs)
		} else {
			res, shareErr, err = u.peer(k, inputs)
		}
		if err != nil {
			fail(err)
			return
		}
		u.mu.Lock()
		e.steps = append(e.steps, res)
		e.stepInputs = append(e.stepInputs, inputs)
		u.mu.Unlock()
		if shareErr != nil {
			u.host.shareFault(ctx, e, shareErr)
			return
		}
		if k < m-1 {
			inputs = res.Next()
		}
	}
	ps := e.steps[m-1].Pseudonyms()
	// PIR keys for the clients of other primaries (§6.2).
	keys := make([]*pir.Keys, n)
	for i, c := range v.Desc.Clients {
		if int(c.Primary) == e.pos {
			continue
		}
		k, err := pir.ServerKeys(e.dkey, v.ID, c.XKey[:])
		if err != nil {
			fail(fmt.Errorf("node: pir keys of slot %d: %w", i, err))
			return
		}
		keys[i] = k
	}
	u.hooks.cfg().Pseudonyms(v.ID, ps)
	u.mu.Lock()
	e.pseudonyms, e.keys, e.setupDone = ps, keys, true
	u.pool.SetLimit(n, int(v.Desc.Params.ChunkSize))
	for r := range uint32(mixDepth) {
		e.opened(r) // the first rounds wait for no publication
	}
	u.host.notify()
	u.mu.Unlock()
	u.log.Info("setup done", "epoch", fmt.Sprintf("%x", v.ID[:6]), "clients", n)
}

// own computes this server's setup step k, proves it and broadcasts it
// to the others (the step and its checks: internal/setupstep). A share
// fault (§4.2 step 3) is returned beside a complete result, not as an
// error.
func (u *settingUp) own(k int, inputs [][]group.Ciphertext) (*mix.StepResult, *mix.ShareError, error) {
	e, ctx := u.e, u.ctx
	v := e.final
	ep := setupEpoch(e)
	r, sec, shareErr, err := setupstep.Own(ep, k, e.sk, inputs, u.rand)
	if sec != nil {
		// Held by the epoch at once, so that erase closes it on
		// every path, failed broadcasts included.
		u.mu.Lock()
		e.sec = sec
		u.mu.Unlock()
	}
	if err != nil {
		return nil, nil, err
	}
	// §3: x_s is erased as soon as setup no longer needs it.
	e.sk.Close()
	raw, err := r.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	u.hooks.run().BadProof(raw)
	st, err := setupstep.Sign(u.priv, v.ID, k, raw)
	if err != nil {
		return nil, nil, err
	}
	msg := st.Marshal()
	var others []peer.ID
	for _, p := range v.Chain {
		if p != u.self {
			others = append(others, p)
		}
	}
	if _, err := u.host.each(ctx, others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeStep, Body: msg, Timeout: transport.BulkTimeout}); err != nil {
		return nil, nil, fmt.Errorf("node: broadcast setup step %d: %w", k, err)
	}
	u.mu.Lock()
	e.forward, e.U = sec.Forward(), r.U
	u.mu.Unlock()
	u.hooks.cfg().Perm(v.ID, e.pos, sec)
	return r, shareErr, nil
}

// peer waits for server k's setup step and verifies it. A share fault
// it proves is returned beside the result, not as an error.
func (u *settingUp) peer(k int, inputs [][]group.Ciphertext) (*mix.StepResult, *mix.ShareError, error) {
	e, ctx := u.e, u.ctx
	var st *wire.Step
	if err := u.host.waitFor(ctx, func() bool { st = e.stepMsgs[k]; return st != nil || e.ended }); err != nil || st == nil {
		return nil, nil, fmt.Errorf("node: no setup step %d: %v", k, err)
	}
	r, shareErr, fault, err := setupstep.Check(setupEpoch(e), k, inputs, st, u.rand)
	if fault != nil {
		// The signed step is public evidence (§8) that any server can
		// check against the descriptor and the earlier steps, so every
		// honest server names server k alike and the next epoch forms
		// without it. A share fault the step proves is not this: it
		// walks back to a client (blame.go).
		u.host.name(e, 0, &roundblame.Culprit{Server: k, Slot: 0, Why: fmt.Sprintf("setup step %d signed by it does not verify: %v", k, fault)}, [][]byte{st.Marshal()})
	}
	return r, shareErr, err
}

// setupEpoch is what a setup step reads of e's final descriptor.
func setupEpoch(e *sepoch) setupstep.Epoch {
	v := e.final
	return setupstep.Epoch{ID: v.ID, Chain: v.Chain, ServerKeys: v.ServerKeys, N: len(v.Desc.Clients)}
}

func (s *Server) onStep(from peer.ID, body []byte) (wire.Type, []byte, error) {
	// The epoch id and step number lead the body: the sender is checked
	// before the step is decoded, then to the epoch's step size.
	if len(body) < 34 {
		return 0, nil, errors.New("node: short setup step")
	}
	var id [32]byte
	copy(id[:], body[:32])
	S := int(binary.BigEndian.Uint16(body[32:34]))
	s.mu.Lock()
	e := s.epochs[id]
	ok := e != nil && !e.ended && S < len(e.v.Chain) && e.v.Chain[S] == from
	s.mu.Unlock()
	if !ok {
		return 0, nil, errors.New("node: setup step of an unknown epoch or from the wrong server")
	}
	var st wire.Step
	if err := st.Unmarshal(body, proto.LimitsFor(e.v.Desc.Params, len(e.v.Chain))); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The final descriptor may reach this server after the first step
	// does (its server started setup on its own copy): check the sender
	// against the open view, whose chain is the final one's.
	if e == nil || e.ended || int(st.S) >= len(e.v.Chain) || e.v.Chain[st.S] != from {
		return 0, nil, errors.New("node: setup step of an unknown epoch or from the wrong server")
	}
	if e.stepMsgs[int(st.S)] == nil {
		e.stepMsgs[int(st.S)] = &st
		s.notify()
	}
	return wire.TypeAck, ack, nil
}
