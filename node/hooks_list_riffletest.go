//go:build riffletest

package node

// The hooks of the request list's path (publish.go, listsig.go, listdue.go).

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func (s *hookRun) ListSigTo(p peer.ID) bool {
	h := s.hooks.Load()
	return h == nil || h.listSigTo == nil || h.listSigTo(p)
}

func (s *hookRun) LeaderLate(r uint32) time.Duration {
	if h := s.hooks.Load(); h != nil && h.leaderLate != nil {
		return h.leaderLate(r)
	}
	return 0
}

func (s *hookRun) ProposalTo(r uint32, chain []peer.ID) []peer.ID {
	if h := s.hooks.Load(); h != nil && h.proposalTo != nil {
		return peersWhere(chain, func(p peer.ID) bool { return h.proposalTo(r, p) })
	}
	return chain
}

// ListTo reports whether this server, as S_0, delivers round r's final
// list to p.
func (s *hookRun) ListTo(r uint32, p peer.ID) bool {
	h := s.hooks.Load()
	return h == nil || h.listTo == nil || h.listTo(r, p)
}

func (s *hookRun) SignLate(r uint32) time.Duration {
	if h := s.hooks.Load(); h != nil && h.signLate != nil {
		return h.signLate(r)
	}
	return 0
}

func (s *hookRun) ListReqRound(r uint32) uint32 {
	if h := s.hooks.Load(); h != nil && h.listReqRound != nil {
		return h.listReqRound(r)
	}
	return r
}

func (s *hookRun) NoAssemble() bool {
	h := s.hooks.Load()
	return h != nil && h.noAssemble
}
