package node

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/index"
	"github.com/riffle-net/riffle/node/internal/pirserve"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
)

// PIR serving (§6) is package internal/pirserve's: the padded answers and
// their combination, a client's query and its answers, each round's
// state under its own lock (sepoch.pir). pirHost is what it asks of the
// server: the epochs, their secrets and lists, the waits, the sends.
type pirHost struct{ s *Server }

// newIndex is s's index and what serves it (internal/index), over the
// store s.store; each part asks the server through its host here.
func newIndex(s *Server) *index.Index {
	return index.New(index.Config{Store: s.store, Log: s.log, Ctx: s.ctx, Timing: &s.cfg.Timing, Pool: &s.pool,
		Spent: func(d time.Duration) { s.timing.add(&s.timing.pir, d) },
		PIR:   pirHost{s}, Pub: pubHost{s}, Peers: indexPeers{s}, Hooks: indexPeers{s}, Catch: catchEnv{s},
		Go: pirHost{s}.Go})
}

// pirEpoch is epoch e as PIR serving reads it; its descriptor is final.
func pirEpoch(e *sepoch) *pirserve.Epoch {
	return &pirserve.Epoch{V: e.final, Pos: e.pos, St: &e.pir, Ref: e}
}

func ofPIR(ep *pirserve.Epoch) *sepoch { return ep.Ref.(*sepoch) }

func (h pirHost) Epoch(id [32]byte) (*pirserve.Epoch, error) {
	e, err := h.s.epochFor(id)
	if err != nil {
		return nil, err
	}
	return pirEpoch(e), nil
}

func (h pirHost) WaitFor(ctx context.Context, cond func() bool) error { return h.s.waitFor(ctx, cond) }

func (h pirHost) Notify() {
	h.s.mu.Lock()
	h.s.notify()
	h.s.mu.Unlock()
}

func (h pirHost) Ended(ep *pirserve.Epoch) bool { return ofPIR(ep).ended }

func (h pirHost) List(ep *pirserve.Epoch, r uint32) *wire.RoundList {
	if x := ofPIR(ep).rounds[r]; x != nil {
		return x.list
	}
	return nil
}

func (h pirHost) QueriesDue(ep *pirserve.Epoch, mine []uint32) int {
	e := ofPIR(ep)
	return e.handover.QueriesDue(mine, e.isDead)
}

func (h pirHost) Admit(ep *pirserve.Epoch, r uint32) error {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return ofPIR(ep).admit(r)
}

func (h pirHost) Owner(ep *pirserve.Epoch, sl uint32) (peer.ID, bool) {
	e := ofPIR(ep)
	return e.reg.From(e.final.Desc.Clients[sl].RegKey)
}

func (h pirHost) Acquire(ep *pirserve.Epoch) ([]*pir.Keys, func(), bool) {
	e, s := ofPIR(ep), h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := e.keys
	if keys == nil || !e.acquire() {
		return nil, nil, false
	}
	return keys, func() {
		s.mu.Lock()
		e.release()
		s.mu.Unlock()
	}, true
}

func (h pirHost) Complete(ep *pirserve.Epoch) {
	h.s.mu.Lock()
	h.s.endQuiet(ofPIR(ep), "complete")
	h.s.mu.Unlock()
}

func (h pirHost) Go(f func()) {
	h.s.wg.Add(1)
	go func() {
		defer h.s.wg.Done()
		f()
	}()
}

func (h pirHost) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, h.s.h, p, r)
}

func (h pirHost) Mask(epoch [32]byte, r, slot uint32, t int, mask []byte, L int) {
	h.s.hookCfg().Mask(epoch, r, slot, t, mask, L)
}

func (h pirHost) Masks(epoch [32]byte, r, slot uint32, masks [][]byte, L int) {
	h.s.hookCfg().Masks(epoch, r, slot, masks, L)
}

func (h pirHost) Corrupt(epoch [32]byte, r, slot uint32, own [][]byte) {
	h.s.hookCfg().Corrupt(epoch, r, slot, own)
}

// answerRound does this server's PIR work of round r (§6.3), its list
// final here.
func (s *Server) answerRound(e *sepoch, r uint32) {
	defer s.trace("answerRound", r)()
	s.mu.Lock()
	rl := e.round(r).list
	s.mu.Unlock()
	s.ix.PIR.AnswerRound(pirEpoch(e), r, rl)
}
