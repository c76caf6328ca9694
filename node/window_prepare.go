package node

import (
	"bytes"
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

// The window a Prepare pins (docs/protocol.md §6.3 v3): the leader's
// choice of what to pin and the gap past a timeout, and a member's check
// of both before it signs, which keeps the walk it checked (window.go
// serves it).

// checkGap is a member's check of a Prepare's Gap: its shape, then each
// certificate, the oldest first, as the kept one or verified against the
// group certified for its number (certs.Check) and then kept, as
// checkPrevious keeps the previous one. Never call with s.mu held.
func (s *Server) checkGap(number uint64, prev *wire.Cert, gap []wire.Cert) error {
	if err := window.CheckGapShape(number, prev, gap); err != nil {
		return err
	}
	for i := len(gap) - 1; i >= 0; i-- {
		c := &gap[i]
		if mine, ok := s.cert.Of(c.Number); ok && bytes.Equal(mine.Marshal(), c.Marshal()) {
			continue
		}
		if err := s.cert.AbortAfterFinal(c); err != nil {
			return fmt.Errorf("node: the gap's certificate of %d: %w", c.Number, err)
		}
		if err := s.cert.Check(c); err != nil {
			return fmt.Errorf("node: the gap's certificate of %d: %w", c.Number, err)
		}
		s.cert.Add(c)
	}
	return nil
}

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
