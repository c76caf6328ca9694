package node

import (
	"context"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/store"
)

// maxIndexServing bounds the index pages a server reads and sends at once
// (each up to wire.MaxIndexPage bytes): the index is public, so any peer
// may ask, and a flood is refused rather than queued.
const maxIndexServing = 8

// onIndexReq answers one page of the index changes logged after the
// request's cursor (§7 v3). Any peer may ask: the index is public, and
// what one page costs is bounded by its fixed-size request (clientCaps),
// the page budget wire.IndexPageBytes and maxIndexServing pages at once;
// the stream's deadline bounds the send. A cursor beyond the log gets an
// empty page ending at the log's end.
func (s *Server) onIndexReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.IndexReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if s.indexServing.Add(1) > maxIndexServing {
		s.indexServing.Add(-1)
		return 0, nil, errors.New("node: too many index requests, try again")
	}
	defer s.indexServing.Add(-1)
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	budget := wire.IndexPageBytes
	if s.cfg.indexPage > 0 {
		budget = s.cfg.indexPage
	}
	ch, err := s.store.IndexSince(req.Cursor, budget)
	if err != nil {
		return 0, nil, err
	}
	if o := s.cfg.observe; o != nil && o.IndexReply != nil {
		ch.Manifests = o.IndexReply(from, ch.Manifests)
	}
	return wire.TypeIndex, indexPage(ch).Marshal(), nil
}

// indexPage is a page of store changes as sent.
func indexPage(ch store.IndexChanges) *wire.Index {
	p := &wire.Index{Next: ch.Next, More: ch.More, Entries: indexToWire(ch.Entries)}
	for _, m := range ch.Manifests {
		p.Manifests = append(p.Manifests, m.Data)
	}
	p.Removed = append(p.Removed, ch.Removed...)
	return p
}
