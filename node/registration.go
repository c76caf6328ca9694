package node

import (
	"context"
	"io"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/registry"
	"github.com/riffle-net/riffle/node/transport"
)

// Registration's handlers are package internal/registry's (Service);
// regHost is what they ask of the server: its keys, peers and waits, the
// epochs under s.mu, the strikes and the left-out peers, and naming a
// primary whose signed registration does not verify (badforward.go).
type regHost struct{ s *Server }

// regEp is e as the registration's handlers see it. Call with s.mu held.
func regEp(e *sepoch) *registry.Ep {
	return &registry.Ep{V: e.v, Final: e.final, Pos: e.pos, Leader: e.leader, Reg: &e.reg, Ref: e}
}

func ofReg(ep *registry.Ep) *sepoch { return ep.Ref.(*sepoch) }

func (h regHost) Self() peer.ID          { return h.s.h.ID() }
func (h regHost) Priv() crypto.PrivKey   { return h.s.priv }
func (h regHost) Rand() io.Reader        { return h.s.rand }
func (h regHost) Range(p peer.ID) string { return h.s.peers.Range(p) }
func (h regHost) NoReceipt() bool        { return h.s.hookCfg().NoReceipt() }

func (h regHost) KeepOut(p peer.ID, epoch [32]byte) bool { return h.s.hookCfg().KeepOut(p, epoch) }

func (h regHost) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, h.s.h, p, r)
}

func (h regHost) WaitFor(ctx context.Context, cond func() bool) error { return h.s.waitFor(ctx, cond) }

func (h regHost) Locked(f func()) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	f()
}

func (h regHost) Open() *registry.Ep {
	if h.s.open == nil {
		return nil
	}
	return regEp(h.s.open)
}

func (h regHost) Epoch(id [32]byte) *registry.Ep {
	if e := h.s.epochs[id]; e != nil {
		return regEp(e)
	}
	return nil
}

func (h regHost) Ended(ep *registry.Ep) (bool, string) {
	e := ofReg(ep)
	return e.ended, e.reason
}

func (h regHost) Aborted(ep *registry.Ep) bool { return ofReg(ep).dup.Started() }

func (h regHost) List(ep *registry.Ep, r uint32) []byte {
	if x := ofReg(ep).rounds[r]; x != nil {
		return x.listBytes
	}
	return nil
}

func (h regHost) Closed(ep *registry.Ep) {
	if h.s.open == ofReg(ep) {
		h.s.open = nil
	}
}

func (h regHost) Refusal(p peer.ID, number uint64) error {
	if err := h.s.clientRefusal(p, number); err != nil {
		return err
	}
	// Left out of this epoch after a duplicate it did not answer
	// (dupwalk.go).
	return h.s.leftOut.Admit(p, number)
}

func (h regHost) NameForwarder(ep *registry.Ep, f *wire.Forwarded, why error) {
	h.s.wg.Add(1)
	go func() {
		defer h.s.wg.Done()
		h.s.nameForwarder(ofReg(ep), f, why, true)
	}()
}
