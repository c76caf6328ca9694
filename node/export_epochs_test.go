package node

import "github.com/libp2p/go-libp2p/core/peer"

// OpenChain returns the chain of the epoch accepting registrations at s
// (nil if none).
func (s *Server) OpenChain() []peer.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		return nil
	}
	return append([]peer.ID(nil), s.open.v.Chain...)
}

// LastNumber returns the last epoch number s signed.
func (s *Server) LastNumber() uint64 { return s.lastNumber() }

// EligibleChain returns the eligible chain at s.
func (s *Server) EligibleChain() []peer.ID { return s.eligibleChain() }

// Led returns how many epochs s opened as leader.
func (s *Server) Led() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn.led
}

// CertTop returns the highest epoch number certified at s.
func (s *Server) CertTop() uint64 { return s.cert.Top() }

// CertKind returns the kind of s's certificate of number n (wire.CertNone
// if it holds none).
func (s *Server) CertKind(n uint64) uint8 {
	c, ok := s.cert.Of(n)
	if !ok {
		return 0
	}
	return c.Kind
}

// RunningLeader returns the leader of an epoch running at s whose setup is
// done ("" if none).
func (s *Server) RunningLeader() peer.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if !e.ended && e.setupDone {
			return e.leader
		}
	}
	return ""
}

// RoundEpoch returns the number and chain of an epoch in its rounds at s
// (setup done, not ended; 0 if none).
func (s *Server) RoundEpoch() (uint64, []peer.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if !e.ended && e.setupDone && e.final != nil {
			return e.v.Desc.Number, append([]peer.ID(nil), e.final.Chain...)
		}
	}
	return 0, nil
}

// Refusals is the refusal-budget count of each server charged here.
func (s *Server) Refusals() map[peer.ID]int { return s.ref.RefusalCounts() }
