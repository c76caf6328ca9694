package node

import (
	"context"
	"io"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/dupwalk"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/transport"
)

// A duplicate U or P at setup (§4.1 v3) is settled by package
// internal/dupwalk (Service: the walk of both positions, the abort, the
// clients' proofs, the verdict); dupHost is what it asks of the server.

// dupServer is the server-wide part: peers left out of the next epoch
// without a strike (docs/protocol.md §4.1).
type dupServer struct {
	leftOut blame.LeftOut
}

// dupEp is e as the duplicate's handlers see it; e's descriptor is final
// or, read under s.mu, not yet.
func dupEp(e *sepoch) *dupwalk.Ep {
	return &dupwalk.Ep{V: e.final, Pos: e.pos, Abort: &e.dup, Reg: &e.reg, Ref: e}
}

func ofDup(ep *dupwalk.Ep) *sepoch { return ep.Ref.(*sepoch) }

type dupHost struct{ s *Server }

func (h dupHost) Self() peer.ID        { return h.s.h.ID() }
func (h dupHost) Priv() crypto.PrivKey { return h.s.priv }
func (h dupHost) Rand() io.Reader      { return h.s.rand }

func (h dupHost) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, h.s.h, p, r)
}

func (h dupHost) Each(ctx context.Context, peers []peer.ID, r transport.Request) ([][]byte, error) {
	return h.s.each(ctx, peers, r)
}

func (h dupHost) WaitFor(ctx context.Context, cond func() bool) error { return h.s.waitFor(ctx, cond) }

func (h dupHost) Locked(f func()) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	f()
}

func (h dupHost) Epoch(id [32]byte) *dupwalk.Ep {
	if e := h.s.epochs[id]; e != nil {
		return dupEp(e)
	}
	return nil
}

func (h dupHost) Ended(ep *dupwalk.Ep) bool              { return ofDup(ep).ended }
func (h dupHost) SetupDone(ep *dupwalk.Ep) bool          { return ofDup(ep).setupDone }
func (h dupHost) Secret(ep *dupwalk.Ep) *mix.StepSecret  { return ofDup(ep).sec }
func (h dupHost) Notify()                                { h.s.notify() }
func (h dupHost) End(ep *dupwalk.Ep, reason string)      { h.s.end(ofDup(ep), reason) }
func (h dupHost) EndQuiet(ep *dupwalk.Ep, reason string) { h.s.endQuiet(ofDup(ep), reason) }

func (h dupHost) LeaveOut(p peer.ID, number uint64) {
	if h.s.leftOut == nil {
		h.s.leftOut = blame.LeftOut{}
	}
	h.s.leftOut.Leave(p, number)
}

func (h dupHost) Steps(ep *dupwalk.Ep) ([][][]group.Ciphertext, []*mix.StepResult) {
	e := ofDup(ep)
	return e.stepInputs, e.steps
}

func (h dupHost) Name(ep *dupwalk.Ep, slot int, why string, evidence [][]byte) {
	h.s.name(ofDup(ep), 0, &roundblame.Culprit{Server: -1, Slot: slot, Why: why}, evidence)
}
