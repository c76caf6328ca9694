package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
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
	for i, p := range v.Chain {
		if p == from {
			pos = i
		}
	}
	if pos < 0 || from == s.h.ID() || r >= v.Desc.Params.Rounds {
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

// fetchPub asks the servers of from for round r's publication, one at a
// time: the next once the one before failed, or fetchGrace after it was
// asked, so that the first copy comes at the full speed of this server's
// link rather than sharing it with every other copy; it takes the first
// copy that checks and stops the others, and stops when the publication
// comes here otherwise. It reports whether the publication is taken here
// (its publishing may still run). A server that does not answer holds the
// asker up to ctx's deadline, no longer. Never call with s.mu held.
func (s *Server) fetchPub(ctx context.Context, e *sepoch, r uint32, from []peer.ID) bool {
	v := e.final
	last := v.Chain[len(v.Chain)-1]
	gone := func() bool {
		if e.ended || e.admit(r) != nil {
			return true
		}
		x := e.round(r)
		return x.batchIn[1] || x.void
	}
	taken := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return gone()
	}
	if taken() {
		return s.pubTaken(e, r)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if s.waitFor(ctx, gone) == nil {
			cancel()
		}
	}()
	q := (&wire.BatchRef{Epoch: v.ID, Round: r, S: uint16(len(v.Chain))}).Marshal()
	failed := make(chan struct{}, len(from))
	var wg sync.WaitGroup
	asked := 0
	for _, p := range from {
		if p == s.h.ID() || p == last {
			continue
		}
		if asked > 0 {
			t := time.NewTimer(fetchGrace(e))
			select {
			case <-failed:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			if ctx.Err() != nil {
				break
			}
		}
		asked++
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := transport.Call(ctx, s.h, p, transport.Request{Proto: ProtoRound, Type: wire.TypeGetBatch, Body: q, Timeout: transport.BulkTimeout, Max: wire.BatchCap(v.Lim)})
			if err == nil {
				// Taken as from the last server: its signature and root.
				_, _, err = s.onBatch(last, raw)
			}
			if err != nil {
				failed <- struct{}{}
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

// watchPub is S_0's watch for round r's publication, which it just
// mixed: once the publication is due here (absenceDue, the last part) and
// fetchGrace more, it is fetched from the chain servers that hold it
// (fetchPub), rather than only once S_0's wait for round r + mixDepth is
// over: a last server that withholds it from S_0 alone has round
// r + mixDepth open at the others from their copy, and S_0's part of it
// is due there from then (§3). S_0 only; never call with s.mu held.
func (s *Server) watchPub(e *sepoch, r uint32) {
	if len(e.final.Chain) < 3 {
		return // no chain server but the last holds the publication
	}
	done := make(chan struct{})
	s.mu.Lock()
	e.round(r).pubWatch = done
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		gone := func() bool {
			if e.ended || e.admit(r) != nil {
				return true
			}
			x := e.round(r)
			return x.batchIn[1] || x.void
		}
		// at is when the publication is due here and fetchGrace more,
		// the zero time while the round is not open here. Call with
		// s.mu held.
		at := func() time.Time {
			due := e.absenceDue(r)
			if due == nil {
				return time.Time{}
			}
			return due[len(due)-1].Add(fetchGrace(e))
		}
		for {
			s.mu.Lock()
			t, g := at(), gone()
			s.mu.Unlock()
			if g || t.IsZero() || s.ctx.Err() != nil {
				return
			}
			if !time.Now().Before(t) {
				break
			}
			// A part that comes moves the due (roots.go wakes this).
			ctx, cancel := context.WithDeadline(s.ctx, t)
			_ = s.waitFor(ctx, func() bool { return gone() || !at().Equal(t) })
			cancel()
		}
		ctx, cancel := context.WithTimeout(s.ctx, time.Duration(e.final.Desc.Params.RoundLimitMs)*time.Millisecond)
		defer cancel()
		s.fetchPub(ctx, e, r, e.final.Chain)
	}()
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

// fetchPubLate waits the grace out whole rather than in waitFor: a
// publication that comes meanwhile makes fetchPub return at once, as it
// did when the wait ended early, and a wait for every round in flight,
// woken by every change of the server, was the most of waitFor's CPU.
func (s *Server) fetchPubLate(e *sepoch, r uint32, s0 peer.ID) {
	t := time.NewTimer(fetchGrace(e))
	select {
	case <-t.C:
	case <-s.ctx.Done():
		t.Stop()
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
	defer cancel()
	s.fetchPub(ctx, e, r, []peer.ID{s0})
}
