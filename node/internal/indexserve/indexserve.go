// Package indexserve serves the index log a page at a time
// (docs/protocol.md §7 v3): to any peer over the client protocol, in the
// index slots (package slots: a registered client's share, the
// outsiders', each address range's), and to the group's servers catching
// up over the epoch protocol, in slots of their own. The index is
// public: what one page costs is bounded by its fixed-size request, the
// page budget wire.IndexPageBytes and the slots; the stream's deadline
// bounds the send. It has no state of its own but the slots, and no lock
// but theirs; the server says who a peer is (Peers).
package indexserve

import (
	"context"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/store"
)

// Peers is who a peer is, as the server sees it.
type Peers interface {
	// Client reports whether p is a client of this server (registered
	// here, admitted or not).
	Client(p peer.ID) bool
	// Ranges are p's address ranges: IPv4 /24 or IPv6 /48, and IPv6 /32.
	Ranges(p peer.ID) (rng, wide string)
	// Group reports whether p is a server of the group.
	Group(p peer.ID) bool
	// EnterServer takes a server reply slot of g for p until ctx ends.
	EnterServer(ctx context.Context, g *slots.Servers, p peer.ID) error
}

// Hooks are the tests' hook points (node's hooks.go): the page budget
// (0: wire.IndexPageBytes), and what a page to a peer holds.
type Hooks interface {
	Page() int
	Manifests(to peer.ID, m []store.Manifest) []store.Manifest
	Closings(to peer.ID, r [][]byte) [][]byte
}

// Store is the part of the server's store the index is read from.
type Store interface {
	IndexSince(cursor uint64, budget int) (store.IndexChanges, error)
}

// Service serves the index.
type Service struct {
	Slots *slots.Index
	Store Store
	Peers Peers
	Hooks Hooks
}

// Enter takes an index slot for a page (or another small reply) to
// from, by who it is, until ctx ends.
func (sv *Service) Enter(ctx context.Context, from peer.ID) error {
	rng, wide := sv.Peers.Ranges(from)
	return sv.Slots.Enter(ctx, from, sv.Peers.Client(from), rng, wide)
}

// OnIndexReq answers one page of the index changes logged after the
// request's cursor. Any peer may ask. A cursor beyond the log gets an
// empty page ending at the log's end.
func (sv *Service) OnIndexReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.IndexReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := sv.Enter(ctx, from); err != nil {
		return 0, nil, err
	}
	return sv.reply(ctx, from, req.Cursor)
}

// OnServerIndexReq answers, over the epoch protocol, a server of the
// group catching up with the page OnIndexReq would give. It takes none
// of the clients' index slots, whose outsiders' share any peer may hold,
// so that such peers cannot keep a server from the records it lacks; a
// peer outside the group is refused before the request is parsed, and a
// server has one page at a time.
func (sv *Service) OnServerIndexReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	if !sv.Peers.Group(from) {
		return 0, nil, errors.New("node: index requests on the epoch protocol only from the group's servers")
	}
	var req wire.IndexReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := sv.Peers.EnterServer(ctx, &sv.Slots.Servers, from); err != nil {
		return 0, nil, err
	}
	return sv.reply(ctx, from, req.Cursor)
}

// reply is the index page after cursor, to from.
func (sv *Service) reply(ctx context.Context, from peer.ID, cursor uint64) (wire.Type, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	budget := wire.IndexPageBytes
	if p := sv.Hooks.Page(); p > 0 {
		budget = p
	}
	ch, err := sv.Store.IndexSince(cursor, budget)
	if err != nil {
		return 0, nil, err
	}
	ch.Manifests = sv.Hooks.Manifests(from, ch.Manifests)
	ch.Closings = sv.Hooks.Closings(from, ch.Closings)
	return wire.TypeIndex, Page(ch).Marshal(), nil
}

// Page is a page of store changes as sent.
func Page(ch store.IndexChanges) *wire.Index {
	p := &wire.Index{Next: ch.Next, More: ch.More, Entries: ToWire(ch.Entries)}
	for _, m := range ch.Manifests {
		p.Manifests = append(p.Manifests, m.Data)
	}
	p.Removed = append(p.Removed, ch.Removed...)
	p.Closings = ch.Closings
	return p
}

// ToWire is the index as the client protocol carries it (no epoch).
func ToWire(idx []store.IndexEntry) []wire.IndexEntry {
	out := make([]wire.IndexEntry, len(idx))
	for i, e := range idx {
		out[i] = wire.IndexEntry{FileID: e.FileID, Name: []byte(e.Name), Size: e.Size, Chunks: e.Chunks, Round: e.Round, Time: e.Time.Unix()}
	}
	return out
}
