package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/catchup"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

// Server catch-up (§7 v3) is package node/internal/catchup's: it reads
// the group's index logs for the closing records this server lacks and
// takes what they sign. catchEnv is what it asks of the server.
type catchEnv struct{ s *Server }

func (c catchEnv) Self() peer.ID        { return c.s.h.ID() }
func (c catchEnv) Chain() []peer.ID     { return c.s.members.Chain() }
func (c catchEnv) Known(p peer.ID) bool { return c.s.roster.get(p) != nil }
func (c catchEnv) CertTop() uint64      { return c.s.cert.Top() }

// EpochRounds is R of epoch id's descriptor (number n): the epoch's own
// while held here, else that of a window item's descriptor, this
// server's or one srcs give, that hashes to id.
func (c catchEnv) EpochRounds(ctx context.Context, n uint64, id [32]byte, srcs []peer.ID) (uint32, bool) {
	s := c.s
	s.mu.Lock()
	var R uint32
	if e := s.epochs[id]; e != nil && e.v != nil && e.v.ID == id {
		R = e.v.Desc.Params.Rounds
	}
	s.mu.Unlock()
	if R > 0 {
		return R, true
	}
	of := func(items []wire.WindowItem) (uint32, bool) {
		for _, it := range items {
			if d := proto.LinkedDescriptor(it.Group, id, n); it.Epoch == id && d != nil && d.Params.Rounds <= proto.MaxRounds {
				return d.Params.Rounds, true
			}
		}
		return 0, false
	}
	if it, ok := s.win.Item(n, window.ItemKey(id, [32]byte{})); ok {
		if R, ok := of([]wire.WindowItem{it}); ok {
			return R, true
		}
	}
	if len(srcs) == 0 {
		return 0, false
	}
	return of(winSrc{s}.Ask(ctx, srcs, n+1))
}

func (c catchEnv) Running(id [32]byte) bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	e := c.s.epochs[id]
	return e != nil && !e.ended
}

func (c catchEnv) Certs(window uint64) (uint64, map[uint64][]byte) { return c.s.cert.Window(window) }

// MissingCert is the lowest number of the catch-up window, but the
// newest recent, whose certificate this server lacks.
func (c catchEnv) MissingCert(recent uint64) (n uint64, ok bool) {
	c.s.cert.Has(func(top uint64, has func(uint64) bool) { n, ok = catchup.MissingCert(top, recent, has) })
	return n, ok
}
func (c catchEnv) CheckCert(ct *wire.Cert) error { return c.s.cert.Check(ct) }
func (c catchEnv) KeepCert(ct *wire.Cert) bool   { return c.s.cert.Keep(ct) }
func (c catchEnv) SyncCerts(ctx context.Context, p peer.ID) (got, answered, whole bool) {
	return c.s.cert.SyncFrom(ctx, p)
}
func (c catchEnv) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, c.s.h, p, r)
}

// HeldList is a round's final list while its epoch is held here, for a
// server catching up (index.OnListReq; the store's otherwise).
func (c catchEnv) HeldList(ref wire.EpochRef) []byte {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.epochs[ref.Epoch]; e != nil {
		if x := e.rounds[ref.Round]; x != nil && x.list != nil && !x.list.Void() {
			return x.listBytes
		}
	}
	return nil
}

// listReqBody lets a test's corrupt server answer another round than the
// one asked (the hook is empty in the binary).
func (s *Server) listReqBody(body []byte) []byte {
	var ref wire.EpochRef
	if ref.Unmarshal(body) != nil {
		return body
	}
	if r := s.hookRun().ListReqRound(ref.Round); r != ref.Round {
		ref.Round = r
		return ref.Marshal()
	}
	return body
}
