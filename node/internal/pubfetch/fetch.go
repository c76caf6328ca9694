// Package pubfetch is a publication that reached only some servers
// (docs/protocol.md §3, "Stagger deliveries?"). The last server's signed
// publication is evidence whoever carries it: its signature is checked
// against the last server's key and its root against its entries, as
// when it came from the last server (node's onBatch). A chain server
// that took it keeps it (Kept) until the round's final list is here and
// hands it to a chain server that asks (GetBatch with S = m, Serve). S_0
// asks the chain before it claims a publication missing (Fetch, Watch),
// and a server asked to sign a list of a round it has not published asks
// S_0 (FetchFrom): a last server that sends its publication to some
// servers and not to others (S_0 among them) no longer makes the honest
// ones refuse S_0's void or list, for which S_0 paid.
//
// Kept has its own leaf lock; the round's state (taken, void, due) is
// the server's, which it gives through Host, and every wait is the
// server's (Host.WaitFor). No lock is held across a fetch.
package pubfetch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Epoch is what the fetches read of an epoch whose descriptor is final:
// its view, its kept publications, and the server's own handle of it
// (for Host).
type Epoch struct {
	V    *proto.View
	Kept *Kept
	Ref  any
}

// Host is what the fetches ask of the server they run in. The methods
// marked "locked" are called under the server's lock (in WaitFor's
// conditions, in Locked, or by a caller that holds it); the others take
// it themselves.
type Host interface {
	Self() peer.ID
	// WaitFor blocks until cond, evaluated under the server's lock,
	// holds or ctx ends.
	WaitFor(ctx context.Context, cond func() bool) error
	// Locked runs f under the server's lock.
	Locked(f func())
	// Gone reports whether round r's publication is no longer wanted
	// here: the epoch ended, the round is not admitted any more, or its
	// publication is taken or the round void (locked).
	Gone(ep *Epoch, r uint32) bool
	// Taken reports whether round r's publication is taken here.
	Taken(ep *Epoch, r uint32) bool
	// Admit reports whether round r may hold new state here.
	Admit(ep *Epoch, r uint32) error
	// Due is when round r's publication is due here, the zero time
	// while the round is not open here (locked).
	Due(ep *Epoch, r uint32) time.Time
	// Grace is how long a part may still take after it is due
	// (blame.Dues.Fetch).
	Grace(ep *Epoch) time.Duration
	// Take takes a publication fetched, as from the last server.
	Take(ep *Epoch, raw []byte) error
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	// Go runs f in the background; the server waits for it on close.
	Go(f func())
}

// Service is a server's fetches of publications. It has no state of its
// own: each epoch's is in its Epoch's Kept.
type Service struct {
	Host Host
	Log  *slog.Logger
	// Ctx is the server's: its end ends every fetch.
	Ctx context.Context
}

// Serve answers a chain server's request for round r's publication.
func (sv *Service) Serve(ep *Epoch, from peer.ID, r uint32) (wire.Type, []byte, error) {
	v := ep.V
	pos := -1
	for i, p := range v.Chain {
		if p == from {
			pos = i
		}
	}
	if pos < 0 || from == sv.Host.Self() || r >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: publication asked by a server outside the chain")
	}
	if err := sv.Host.Admit(ep, r); err != nil {
		return 0, nil, err
	}
	raw, err := ep.Kept.serve(r, pos)
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeBatch, raw, nil
}

// Fetch asks the servers of from for round r's publication, one at a
// time: the next once the one before failed, or the grace after it was
// asked, so that the first copy comes at the full speed of this server's
// link rather than sharing it with every other copy; it takes the first
// copy that checks and stops the others, and stops when the publication
// comes here otherwise. It reports whether the publication is taken here
// (its publishing may still run). A server that does not answer holds the
// asker up to ctx's deadline, no longer. Never call with the server's
// lock held.
func (sv *Service) Fetch(ctx context.Context, ep *Epoch, r uint32, from []peer.ID) bool {
	v := ep.V
	last := v.Chain[len(v.Chain)-1]
	taken := func() (g bool) {
		sv.Host.Locked(func() { g = sv.Host.Gone(ep, r) })
		return g
	}
	if taken() {
		return sv.Host.Taken(ep, r)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if sv.Host.WaitFor(ctx, func() bool { return sv.Host.Gone(ep, r) }) == nil {
			cancel()
		}
	}()
	q := (&wire.BatchRef{Epoch: v.ID, Round: r, S: uint16(len(v.Chain))}).Marshal()
	failed := make(chan struct{}, len(from))
	var wg sync.WaitGroup
	asked := 0
	for _, p := range from {
		if p == sv.Host.Self() || p == last {
			continue
		}
		if asked > 0 {
			t := time.NewTimer(sv.Host.Grace(ep))
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
			raw, err := sv.Host.Call(ctx, p, transport.Request{Proto: transport.ProtoRound, Type: wire.TypeGetBatch, Body: q, Timeout: transport.BulkTimeout, Max: wire.BatchCap(v.Lim)})
			if err == nil {
				// Taken as from the last server: its signature and root.
				err = sv.Host.Take(ep, raw)
			}
			if err != nil {
				failed <- struct{}{}
				sv.Log.Debug("fetch publication", "round", r, "from", p.ShortString(), "err", err)
				return
			}
			if taken() {
				cancel()
				sv.Log.Info("publication fetched from a chain server", "round", r, "from", p.ShortString())
			}
		}()
	}
	wg.Wait()
	return sv.Host.Taken(ep, r)
}

// Watch is S_0's watch for round r's publication, which it just mixed:
// once the publication is due here (Host.Due, the last part) and the
// grace more, it is fetched from the chain servers that hold it (Fetch),
// rather than only once S_0's wait for round r + mixDepth is over: a last
// server that withholds it from S_0 alone has round r + mixDepth open at
// the others from their copy, and S_0's part of it is due there from
// then (§3). S_0 only; never call with the server's lock held.
func (sv *Service) Watch(ep *Epoch, r uint32) {
	if len(ep.V.Chain) < 3 {
		return // no chain server but the last holds the publication
	}
	done := make(chan struct{})
	ep.Kept.watching(r, done)
	sv.Host.Go(func() {
		defer close(done)
		// at is when the publication is due here and the grace more,
		// the zero time while the round is not open here (locked).
		at := func() time.Time {
			due := sv.Host.Due(ep, r)
			if due.IsZero() {
				return due
			}
			return due.Add(sv.Host.Grace(ep))
		}
		for {
			var t time.Time
			var g bool
			sv.Host.Locked(func() { t, g = at(), sv.Host.Gone(ep, r) })
			if g || t.IsZero() || sv.Ctx.Err() != nil {
				return
			}
			if !time.Now().Before(t) {
				break
			}
			// A part that comes moves the due (node's roots.go wakes this).
			ctx, cancel := context.WithDeadline(sv.Ctx, t)
			_ = sv.Host.WaitFor(ctx, func() bool { return sv.Host.Gone(ep, r) || !at().Equal(t) })
			cancel()
		}
		ctx, cancel := context.WithTimeout(sv.Ctx, time.Duration(ep.V.Desc.Params.RoundLimitMs)*time.Millisecond)
		defer cancel()
		sv.Fetch(ctx, ep, r, ep.V.Chain)
	})
}

// FetchFrom is Fetch from S_0 alone, after the grace, once a round: a
// server asked to sign a list of round r before the publication came
// here. Call with the server's lock held.
func (sv *Service) FetchFrom(ep *Epoch, r uint32, s0 peer.ID) {
	if sv.Host.Gone(ep, r) || !ep.Kept.startFetch(r) {
		return
	}
	sv.Host.Go(func() { sv.fetchLate(ep, r, s0) })
}

// fetchLate waits the grace out whole rather than in WaitFor: a
// publication that comes meanwhile makes Fetch return at once, as it
// did when the wait ended early, and a wait for every round in flight,
// woken by every change of the server, was the most of WaitFor's CPU.
func (sv *Service) fetchLate(ep *Epoch, r uint32, s0 peer.ID) {
	t := time.NewTimer(sv.Host.Grace(ep))
	select {
	case <-t.C:
	case <-sv.Ctx.Done():
		t.Stop()
		return
	}
	ctx, cancel := context.WithTimeout(sv.Ctx, transport.BulkTimeout)
	defer cancel()
	sv.Fetch(ctx, ep, r, []peer.ID{s0})
}
