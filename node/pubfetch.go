package node

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/pubfetch"
	"github.com/riffle-net/riffle/node/transport"
)

// A publication that reached only some servers (§3) is fetched from one
// that holds it: package internal/pubfetch, each epoch's kept
// publications under their own lock (sepoch.pubs). pubHost is what it
// asks of the server: the rounds' state, the waits, taking a
// publication as from the last server.
type pubHost struct{ s *Server }

// pubEpoch is epoch e as the fetches read it; its descriptor is final.
func pubEpoch(e *sepoch) *pubfetch.Epoch {
	return &pubfetch.Epoch{V: e.final, Kept: &e.pubs, Ref: e}
}

func ofPub(ep *pubfetch.Epoch) *sepoch { return ep.Ref.(*sepoch) }

func (h pubHost) Self() peer.ID { return h.s.h.ID() }

func (h pubHost) WaitFor(ctx context.Context, cond func() bool) error { return h.s.waitFor(ctx, cond) }

func (h pubHost) Locked(f func()) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	f()
}

func (h pubHost) Gone(ep *pubfetch.Epoch, r uint32) bool {
	e := ofPub(ep)
	if e.ended || e.admit(r) != nil {
		return true
	}
	x := e.round(r)
	return x.batchIn[1] || x.void
}

func (h pubHost) Taken(ep *pubfetch.Epoch, r uint32) bool {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return ofPub(ep).round(r).batchIn[1]
}

func (h pubHost) Admit(ep *pubfetch.Epoch, r uint32) error {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return ofPub(ep).admit(r)
}

func (h pubHost) Due(ep *pubfetch.Epoch, r uint32) time.Time {
	if due := ofPub(ep).absenceDue(r); due != nil {
		return due[len(due)-1]
	}
	return time.Time{}
}

func (h pubHost) Grace(ep *pubfetch.Epoch) time.Duration { return fetchGrace(ofPub(ep)) }

func (h pubHost) Take(ep *pubfetch.Epoch, raw []byte) error {
	v := ep.V
	_, _, err := h.s.mixing.onBatch(v.Chain[len(v.Chain)-1], raw)
	return err
}

func (h pubHost) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, h.s.h, p, r)
}

func (h pubHost) Go(f func()) {
	h.s.wg.Add(1)
	go func() {
		defer h.s.wg.Done()
		f()
	}()
}
