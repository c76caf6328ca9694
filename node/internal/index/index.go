// Package index is a server's public index and what serves it
// (docs/protocol.md §6, §7): the store of chunks, request lists and
// closing records (package chunks) and its retention, the manifests a
// round adds to the index (package manifests), the index pages served to
// clients and to the group's servers (package indexserve) in their reply
// slots (package slots), a primary's PIR answers (§6.3, package
// pirserve), the publications kept for the chain and fetched from it
// (§3, package pubfetch) and the catch-up (§7 v3, package catchup).
//
// Index is the type. It has no lock of its own: each part keeps its state
// under its own leaf lock, and the server's epochs, their secrets and
// rounds stay the server's, which each part reads through its Host. No
// lock is held across a store read or a send. It does not import node.
package index

import (
	"context"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/catchup"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/node/internal/indexserve"
	"github.com/riffle-net/riffle/node/internal/manifests"
	"github.com/riffle-net/riffle/node/internal/pirserve"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/pubfetch"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
)

// Index is a server's index and its serving.
type Index struct {
	// Store keeps what the server holds (§7).
	Store chunks.Store
	// Slots are the index pages' reply slots (their own leaf locks).
	Slots slots.Index
	// Pages serves the index log a page at a time.
	Pages *indexserve.Service
	// PIR answers the clients' queries and sends the padded answers.
	PIR *pirserve.Service
	// Pub keeps a round's publication for the chain and fetches it.
	Pub *pubfetch.Service
	// Catch brings the store up to date from the group's index logs.
	Catch catchup.Catchup

	log  *slog.Logger
	goFn func(func())
}

// Config is what an Index is made of: the store, and the server's side
// of each part.
type Config struct {
	Store  chunks.Store
	Log    *slog.Logger
	Ctx    context.Context // the server's: its end ends every fetch and answer
	Timing *proto.Tunables
	Pool   *transport.BufPool // the server's round buffers
	// Spent adds the time a PIR answer's computation took.
	Spent func(time.Duration)
	PIR   pirserve.Host
	Pub   pubfetch.Host
	Peers indexserve.Peers
	Hooks indexserve.Hooks
	Catch catchup.Server
	// Go runs f in the server's wait group.
	Go func(f func())
}

// New returns the index of c.
func New(c Config) *Index {
	ix := &Index{Store: c.Store, log: c.Log, goFn: c.Go}
	ix.PIR = &pirserve.Service{Host: c.PIR, Store: c.Store, Engine: pir.NewEngine(pir.Options{}), Pool: c.Pool,
		Log: c.Log, Ctx: c.Ctx, Spent: c.Spent, Linger: c.Timing.LastRoundLinger, Grace: c.Timing.EndGrace}
	ix.Pub = &pubfetch.Service{Host: c.Pub, Log: c.Log, Ctx: c.Ctx}
	ix.Pages = &indexserve.Service{Slots: &ix.Slots, Store: c.Store, Peers: c.Peers, Hooks: c.Hooks}
	ix.Catch.Init(c.Catch, c.Store, c.Log, c.Timing)
	return ix
}

// OnPIR serves the PIR protocol: a client's k masks for a round and its k
// combined answers (§6.3).
func (ix *Index) OnPIR(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, [][]byte, error) {
	if err := transport.Takes(transport.ProtoPIR, t); err != nil {
		return 0, nil, err
	}
	return ix.PIR.HandleQuery(ctx, from, body)
}

// TakeManifests takes round r's candidates of epoch id through the caps
// of m (R rounds, chunks of size b) and stores what they let in, with the
// rounds that waited for r; wake runs once any round is indexed, before
// the store is written.
func (ix *Index) TakeManifests(m *manifests.Index, id [32]byte, R, b, r uint32, cands []manifests.Cand, wake func()) {
	rs := m.Add(R, b, r, cands)
	if len(rs) > 0 {
		wake()
	}
	manifests.Put(ix.Store, ix.log, id, rs)
}

// FlushManifests indexes the rounds of m still waiting when epoch id
// ends, stored in the background; it reports whether there were any.
func (ix *Index) FlushManifests(m *manifests.Index, id [32]byte) bool {
	rs := m.Flush()
	if len(rs) == 0 {
		return false
	}
	ix.goFn(func() { manifests.Put(ix.Store, ix.log, id, rs) })
	return true
}

// OnListReq serves a round's final list to a server catching up: held's
// (the list of an epoch still held in memory) if any, else as stored.
func (ix *Index) OnListReq(body []byte, held func(wire.EpochRef) []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	if err := ref.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	b := held(ref)
	if b == nil {
		var err error
		if b, err = ix.Store.List(ref.Epoch, ref.Round); err != nil {
			return 0, nil, err
		}
	}
	return wire.TypeRoundList, b, nil
}

// Usage is the chunk data the store holds, 0 for a store that does not
// count (the in-memory one).
func (ix *Index) Usage() int64 {
	if bs, ok := ix.Store.(*chunks.BoltStore); ok {
		return bs.DB().Usage()
	}
	return 0
}

// pruner is a store with retention (the bbolt store).
type pruner interface {
	Prune(now time.Time) (int, error)
}

// Prunes reports whether the store applies a retention.
func (ix *Index) Prunes() bool {
	_, ok := ix.Store.(pruner)
	return ok
}

// PruneLoop applies the store's retention every period until ctx ends
// (§7); the store logs what it removed.
func (ix *Index) PruneLoop(ctx context.Context, every time.Duration) {
	p, ok := ix.Store.(pruner)
	if !ok {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if _, err := p.Prune(now); err != nil {
				ix.log.Error("prune store", "err", err)
			}
		}
	}
}
