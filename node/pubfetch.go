package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// A publication that reached only some servers (docs/protocol.md §3,
// "Stagger deliveries?"). The last server's signed publication is
// evidence whoever carries it: its signature is checked against the last
// server's key and its root against its entries, as when it came from
// the last server (onBatch). A chain server that took it keeps it until
// the round's final list is here and hands it to a chain server that asks
// (GetBatch with S = m). S_0 asks the chain before it claims a
// publication missing, and a server asked to sign a list of a round it
// has not published asks S_0: a last server that sends its publication
// to some servers and not to others (S_0 among them) no longer makes the
// honest ones refuse S_0's void or list, for which S_0 paid.

// pubServes bounds the copies of one round's publication a server hands
// to one chain position (a retry after a lost transfer, not a flood).
const pubServes = 2

// servePub answers a chain server's request for round r's publication.
func (s *Server) servePub(e *sepoch, from peer.ID, r uint32) (wire.Type, []byte, error) {
	v := e.final
	pos := -1
	for i, p := range v.chain {
		if p == from {
			pos = i
		}
	}
	if pos < 0 || from == s.h.ID() || r >= v.desc.Params.Rounds {
		return 0, nil, errors.New("node: publication asked by a server outside the chain")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := e.admit(r); err != nil {
		return 0, nil, err
	}
	x := e.round(r)
	if x.pubRaw == nil {
		return 0, nil, fmt.Errorf("node: no publication of round %d kept here", r)
	}
	if x.pubServed[pos] >= pubServes {
		return 0, nil, fmt.Errorf("node: publication of round %d handed to position %d already", r, pos)
	}
	if x.pubServed == nil {
		x.pubServed = map[int]int{}
	}
	x.pubServed[pos]++
	return wire.TypeBatch, x.pubRaw, nil
}

// fetchPub asks the servers of from at once for round r's publication
// and takes the first copy that checks; it reports whether the
// publication is taken here (its publishing may still run). A server that
// does not answer holds the asker up to ctx's deadline, no longer. Never
// call with s.mu held.
func (s *Server) fetchPub(ctx context.Context, e *sepoch, r uint32, from []peer.ID) bool {
	v := e.final
	last := v.chain[len(v.chain)-1]
	taken := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		x := e.round(r)
		return x.batchIn[1] || x.void || e.ended
	}
	if taken() {
		return s.pubTaken(e, r)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := (&wire.BatchRef{Epoch: v.id, Round: r, S: uint16(len(v.chain))}).Marshal()
	var wg sync.WaitGroup
	for _, p := range from {
		if p == s.h.ID() || p == last {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := call(ctx, s.h, p, request{Proto: ProtoRound, Type: wire.TypeGetBatch, Body: q, Timeout: bulkTimeout, Max: wire.BatchCap(v.lim)})
			if err == nil {
				// Taken as from the last server: its signature and root.
				_, _, err = s.onBatch(last, raw)
			}
			if err != nil {
				s.log.Debug("fetch publication", "round", r, "from", p.ShortString(), "err", err)
				return
			}
			if taken() {
				cancel()
				s.log.Info("publication fetched from a chain server", "round", r, "from", p.ShortString())
			}
		}()
	}
	wg.Wait()
	return s.pubTaken(e, r)
}

func (s *Server) pubTaken(e *sepoch, r uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.round(r).batchIn[1]
}

// fetchPubFrom is fetchPub from S_0 alone, after fetchGrace, once a
// round: a server asked to sign a list of round r before the publication
// came here. Call with s.mu held.
func (s *Server) fetchPubFrom(e *sepoch, r uint32, s0 peer.ID) {
	if e.ended || e.admit(r) != nil {
		return
	}
	x := e.round(r)
	if x.pubFetching || x.batchIn[1] || x.void {
		return
	}
	x.pubFetching = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.fetchPubLate(e, r, s0)
	}()
}

func (s *Server) fetchPubLate(e *sepoch, r uint32, s0 peer.ID) {
	ctx, cancel := context.WithTimeout(s.ctx, fetchGrace(e))
	_ = s.waitFor(ctx, func() bool {
		x := e.round(r)
		return x.batchIn[1] || x.void || e.ended
	})
	cancel()
	ctx, cancel = context.WithTimeout(s.ctx, bulkTimeout)
	defer cancel()
	s.fetchPub(ctx, e, r, []peer.ID{s0})
}
