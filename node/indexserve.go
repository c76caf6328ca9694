package node

import (
	"context"
	"errors"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/store"
)

// Index pages served at once (each up to wire.MaxIndexPage bytes, held
// from the read until the stream ends): the index is public, so any peer
// may ask, and a flood is refused rather than queued. Peers with no slot
// here (anyone, and clients syncing from another server than their
// primary) share maxOutsiderIndex of them, so that they cannot keep this
// server's own clients from syncing.
const (
	maxIndexServing  = 32
	maxOutsiderIndex = 8
)

// indexSlots counts the index pages in flight.
type indexSlots struct {
	mu             sync.Mutex
	all, outsiders int
}

// enterIndex takes a slot for a page to from; the slot is given back when
// ctx ends, that is once the reply is written or the stream's deadline
// passed.
func (s *Server) enterIndex(ctx context.Context, from peer.ID) error {
	outsider := !s.isClientPeer(from)
	g := &s.indexSlots
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.all >= maxIndexServing || (outsider && g.outsiders >= maxOutsiderIndex) {
		return errors.New("node: too many index requests, try again")
	}
	g.all++
	if outsider {
		g.outsiders++
	}
	go func() {
		<-ctx.Done()
		g.mu.Lock()
		g.all--
		if outsider {
			g.outsiders--
		}
		g.mu.Unlock()
	}()
	return nil
}

// Window replies served at once (window.go). Every client of an epoch
// asks every server of the chain for the same window before it registers,
// when no server counts it as one of its clients yet: in the outsiders'
// share of the index slots (8), a server refused most of the clients of
// an epoch of 32, and those that found every server busy sat the epoch
// out (TestWindowAtClientCap). Window requests have slots of their own,
// a peer one at a time, so that neither they nor index pages crowd out
// the other; a refused client asks again (fetchWindow).
const maxWindowServing = 32

// errWindowBusy refuses a window request for want of a slot: the client
// asks again a little later.
const errWindowBusy = wire.Refusal("node: too many window requests, try again")

// windowSlots holds the peers whose window reply is being read and sent.
type windowSlots struct {
	mu sync.Mutex
	by map[peer.ID]bool
}

// enterWindow takes a window slot for from until ctx ends (the reply
// written or the stream's deadline passed), or refuses with errWindowBusy.
func (s *Server) enterWindow(ctx context.Context, from peer.ID) error {
	g := &s.windowSlots
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.by[from] || len(g.by) >= maxWindowServing {
		return errWindowBusy
	}
	if g.by == nil {
		g.by = map[peer.ID]bool{}
	}
	g.by[from] = true
	go func() {
		<-ctx.Done()
		g.mu.Lock()
		delete(g.by, from)
		g.mu.Unlock()
	}()
	return nil
}

// onIndexReq answers one page of the index changes logged after the
// request's cursor (§7 v3). Any peer may ask: the index is public, and
// what one page costs is bounded by its fixed-size request (clientCaps),
// the page budget wire.IndexPageBytes and the slots above; the stream's
// deadline bounds the send. A cursor beyond the log gets an empty page
// ending at the log's end.
func (s *Server) onIndexReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.IndexReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := s.enterIndex(ctx, from); err != nil {
		return 0, nil, err
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	budget := wire.IndexPageBytes
	if p := s.hookIndexPage(); p > 0 {
		budget = p
	}
	ch, err := s.store.IndexSince(req.Cursor, budget)
	if err != nil {
		return 0, nil, err
	}
	ch.Manifests = s.hookIndexReply(from, ch.Manifests)
	ch.Closings = s.hookIndexClosings(from, ch.Closings)
	return wire.TypeIndex, indexPage(ch).Marshal(), nil
}

// indexPage is a page of store changes as sent.
func indexPage(ch store.IndexChanges) *wire.Index {
	p := &wire.Index{Next: ch.Next, More: ch.More, Entries: indexToWire(ch.Entries)}
	for _, m := range ch.Manifests {
		p.Manifests = append(p.Manifests, m.Data)
	}
	p.Removed = append(p.Removed, ch.Removed...)
	p.Closings = ch.Closings
	return p
}
