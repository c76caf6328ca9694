package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"
)

// isClientPeer reports whether p registered a slot or a registration of
// a running epoch with this server.
func (s *Server) isClientPeer(p peer.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if !e.ended && e.reg.RegisteredBy(p) {
			return true
		}
	}
	return false
}

// enterPoll admits a long poll from p, or refuses it at once
// (internal/polls: bounded per peer and in all, an outsider's WaitOpen,
// short set, cut to Tunables.OutsiderPoll). Call release when the poll
// ends.
func (s *Server) enterPoll(ctx context.Context, p peer.ID, short bool) (context.Context, func(), error) {
	return s.polls.Enter(ctx, p, s.isClientPeer(p), short, s.cfg.Timing.OutsiderPoll)
}
