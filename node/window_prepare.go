package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

// The window a Prepare pins (docs/protocol.md §6.3 v3): the leader's
// choice of what to pin and the gap past a timeout, and a member's check
// of both before it signs (window.CheckGap), which keeps the walk it
// checked (window.Service serves it).

// takeWindow holds the window a Prepare pins before this server answers
// it: every pinned record and pool, from this server's store or else the
// leader's, kept here with the walked descriptors. It returns the walk,
// which this server serves as the number's window once it takes the
// Prepare (window.Items.KeepWalk).
func (s *Server) takeWindow(leader peer.ID, p *wire.Prepare) ([]window.Ref, error) {
	// Within the leader's wait for the answer.
	ctx, cancel := context.WithTimeout(s.ctx, transport.ShortTimeout/2)
	defer cancel()
	return s.win.Hold(ctx, leader, p, true)
}
