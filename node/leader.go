package node

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/leader"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// loop runs epochs while this server heads the chain of live servers.
func (rt *rotation) loop(ctx context.Context) {
	s := rt.s
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.Timing.LeaderPoll):
		}
		number, full := rt.takeTurn()
		if number == 0 {
			continue
		}
		chain := s.who.Proposed(s.h.ID(), full)
		if len(chain) < s.cfg.MinServers || !s.cert.HoldsPrevGroup(number, chain) {
			continue
		}
		l := leader.New(ctx, s.leaderConfig(), leadHost{s}, chain, number)
		if err := l.Run(); err != nil && ctx.Err() == nil {
			if t := (*leader.TurnTaking)(nil); errors.As(err, &t) {
				s.log.Debug("epoch put off", "err", err)
			} else {
				s.log.Warn("epoch failed", "err", err)
			}
			if errors.Is(err, leader.ErrRetryWithout) {
				// The same number at once without the server that
				// refused (§3): well within T_lead.
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.cfg.Timing.LeaderRetry):
			}
		}
	}
}

// leaderConfig is what an epoch led here takes of the server
// (internal/leader).
func (s *Server) leaderConfig() leader.Config {
	return leader.Config{Self: s.h.ID(), Params: s.cfg.Params.Wire(), MinClients: s.cfg.MinClients, Timing: &s.cfg.Timing,
		Rand: s.rand, Log: s.log, Certs: &s.cert, Window: &s.win, Charges: &s.ref, Hooks: s.leaderHooks()}
}

// leadHost is the server as an epoch led here sees it (leader.Host).
type leadHost struct{ s *Server }

func (h leadHost) Ctx() context.Context { return h.s.ctx }
func (h leadHost) Go(f func()) {
	h.s.wg.Add(1)
	go func() {
		defer h.s.wg.Done()
		f()
	}()
}
func (h leadHost) Each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error) {
	return h.s.each(ctx, chain, r)
}
func (h leadHost) Live(p peer.ID) bool { return h.s.roster.get(p) != nil }
func (h leadHost) Epoch(id [32]byte) leader.Epoch {
	h.s.mu.Lock()
	e := h.s.epochs[id]
	h.s.mu.Unlock()
	if e == nil {
		return nil
	}
	return ledEpoch{h.s, e}
}
func (h leadHost) Registering(id [32]byte) (leader.Epoch, int, bool) {
	s := h.s
	s.mu.Lock()
	e := s.epochs[id]
	count, ended := 0, false
	if e != nil {
		count, ended = e.reg.ForwardedCount(), e.ended
	}
	s.mu.Unlock()
	if e == nil {
		return nil, 0, false
	}
	return ledEpoch{s, e}, count, ended
}
func (h leadHost) Led() {
	h.s.mu.Lock()
	h.s.turn.led++
	h.s.mu.Unlock()
}
func (h leadHost) AbortBody(id [32]byte, reason string) []byte {
	return h.s.evs().CoordAbort(id, reason)
}
func (h leadHost) HandEvidence(ctx context.Context, chain []peer.ID, n uint64) {
	h.s.evs().HandEvidence(ctx, chain, n)
}
func (h leadHost) NoteWithdrawal(err error) bool { return h.s.noteWithdrawal(err) }
func (h leadHost) Candidates(n uint64, chain []peer.ID) [][]byte {
	return h.s.members.Candidates(n, chain)
}

// ledEpoch is an epoch led here, as its leader sees it (leader.Epoch).
type ledEpoch struct {
	s *Server
	e *sepoch
}

func (l ledEpoch) View() *proto.View                          { return l.e.v }
func (l ledEpoch) Forwarded() map[[32]byte]wire.Forwarded     { return l.e.reg.Forwarded() }
func (l ledEpoch) NameForwarder(f *wire.Forwarded, why error) { l.s.nameForwarder(l.e, f, why, true) }
func (l ledEpoch) AwaitEnd(ctx context.Context) error {
	return l.s.waitFor(ctx, func() bool { return l.e.ended })
}
func (l ledEpoch) EndStale() {
	l.s.mu.Lock()
	l.s.endStaleLocked(l.e)
	l.s.mu.Unlock()
}
