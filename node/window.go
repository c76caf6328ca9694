package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

// The group's decoy pool (§6.3 v3) is a pure function of the published
// lists (window.EpochPoolPairs, window.SetPool).

// setPool fills record c's pool fields from the lists this server holds
// or signed; ok is false if it lacks a published round's list. Call with
// s.mu held.
func setPool(e *sepoch, c *wire.Closing) (*wire.DecoyPool, bool) {
	return window.SetPool(c, func(r uint32, list [32]byte) (window.Listed, bool) {
		x := e.rounds[r]
		switch {
		case x != nil && x.list != nil && proto.ListDigest(x.list) == list:
			return window.Listed{Pairs: window.ListPoolPairs(x.list), Manifests: x.list.Manifests}, true
		case x != nil && x.signedState == wire.ClosedPublished && x.signed == list:
			return x.signedListed, true
		}
		return window.Listed{}, false
	})
}

// keepWindowItem keeps what a client needs of epoch e once its closing
// record rec (all its signatures; c is the same without them) is stored
// here: its descriptor without clients, the record and the pool, as one
// item under the record's digest (so that a walk pinning this record
// finds it) and as this server's own item of the epoch.
func (s *Server) keepWindowItem(e *sepoch, c *wire.Closing, rec []byte) {
	s.mu.Lock()
	pool, ok := setPool(e, c)
	v := e.final
	s.mu.Unlock()
	if !ok {
		s.log.Warn("decoy pool: a published list is missing here")
		return
	}
	it := wire.WindowItem{Number: v.Desc.Number, Epoch: v.ID, Group: window.GroupBytes(v.Desc), Closing: rec, Pool: pool.Marshal()}
	s.win.Put(window.ItemKey(v.ID, proto.ClosingDigest(c)), it)
	s.win.Put(window.ItemKey(v.ID, [32]byte{}), it)
}

// The window is served and asked for by package internal/window
// (Service); winPeers is who a peer is and its slots, as it asks.
type winPeers struct{ s *Server }

func (w winPeers) Self() peer.ID                     { return w.s.h.ID() }
func (w winPeers) Group(p peer.ID) bool              { return w.s.members.GroupPeer(p) }
func (w winPeers) Refuse(p peer.ID) bool             { return w.s.hookCfg().WindowRefuse(p) }
func (w winPeers) Reply(p peer.ID, win *wire.Window) { w.s.hookCfg().WindowReply(p, win) }

func (w winPeers) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, w.s.h, p, r)
}

func (w winPeers) EnterClient(ctx context.Context, p peer.ID) error {
	return w.s.windowSlots.EnterClient(ctx, p, w.s.peers.Range(p))
}

func (w winPeers) EnterServer(ctx context.Context, p peer.ID) error {
	return w.s.peers.EnterServer(ctx, &w.s.windowSlots.Servers, p)
}

// groupPeer is members.Chains.GroupPeer (evidence.go's name).
func (s *Server) groupPeer(p peer.ID) bool { return s.members.GroupPeer(p) }

// The certified window (§6.3 v3). The leader of N pins N's window in its
// Prepare: the epochs walkWindow finds (the last DecoyEpochs final epochs
// of number at most N−2 with a record and pool), each with its record's
// digest. A member answers the Prepare only once it holds every pinned
// record and pool, from its own store or from the leader, and keeps them
// with the walked descriptors; it signs the open descriptor only if it
// pins the same. So when N opens, every honest server of N's chain can
// give a client the whole window, whoever the epochs' first servers gave
// their records to. A Prepare that leaves out a record N−1's descriptor
// pinned, while the window has room for it or pins an older epoch, is
// refused: it is the leader's signed choice, public in the Prepare.

// Ask asks the group's servers for the window (window.Service.Ask).
func (w winSrc) Ask(ctx context.Context, peers []peer.ID, number uint64) []wire.WindowItem {
	return w.s.wins.Ask(ctx, peers, number)
}

// The walk past a timeout (§6.3 v3). A timeout certificate names no
// epoch, so a walk that reached one stopped there, and the two numbers
// after a timeout pinned no epoch. The Prepare of N whose previous
// certificate is a timeout carries the Gap: the certificates of N−2,
// N−3, … down to the newest that names an epoch (final or abort), or to
// the window's look-back if all of them are timeouts. Every member checks
// each against the group certified for its number and refuses a Gap that
// stops short, skips a number or goes on past an epoch, so the walk past
// N−1's timeout reaches the same epochs it would have reached had N−1
// opened, for every client of N.

// The Gap holds at most a certificate a number of the look-back below N−1.
const _ = uint(wire.MaxGapCerts - (WindowLookback - 1))

// A server's window reply (windowItems, and the walk it checked) fits the
// wire's items.
const _ = uint(wire.MaxWindowItems - 2*BudgetLookback)

// winSrc is what the window's store asks of the server.
type winSrc struct{ s *Server }

func (w winSrc) CertOf(n uint64) (*wire.Cert, bool) { return w.s.cert.Of(n) }
func (w winSrc) Lack() bool                         { return w.s.hookRun().LackWindow() }
func (w winSrc) Unpinned() bool                     { return w.s.hookCfg().UnpinnedWindow() }

// Group returns the descriptor without clients of an epoch still in
// memory here (an aborted setup, or one whose record has not come).
func (w winSrc) Group(id [32]byte) []byte {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	e := w.s.epochs[id]
	if e == nil || e.v == nil {
		return nil
	}
	return window.GroupBytes(e.v.Desc)
}
