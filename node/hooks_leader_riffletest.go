//go:build riffletest

package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// More of the hook points of hookRun (the types and the rest:
// hooks_riffletest.go): the leader's, and the ones of charges and
// certificates.

// LeaderWindow may change the window this leader pins.
func (s *hookRun) LeaderWindow(number uint64, w []wire.WindowRef) []wire.WindowRef {
	if h := s.hooks.Load(); h != nil && h.leaderWindow != nil {
		return h.leaderWindow(number, w)
	}
	return w
}

// LeaderGap may change the Gap this leader carries.
func (s *hookRun) LeaderGap(number uint64, g []wire.Cert) []wire.Cert {
	if h := s.hooks.Load(); h != nil && h.leaderGap != nil {
		return h.leaderGap(number, g)
	}
	return g
}

// HoldOpen reports whether this leader holds its open epoch's
// registration for good.
func (s *hookRun) HoldOpen() bool {
	h := s.hooks.Load()
	return h != nil && h.holdOpen != nil && h.holdOpen()
}

// SignedTo is the servers of chain this leader delivers its signed
// open or final descriptor to.
func (s *hookRun) SignedTo(final bool, chain []peer.ID) []peer.ID {
	h := s.hooks.Load()
	if h == nil || h.signedTo == nil {
		return chain
	}
	return h.signedTo(final, chain)
}

// OpenLate is how long this leader holds back its signed open
// descriptor from p.
func (s *hookRun) OpenLate(p peer.ID) time.Duration {
	h := s.hooks.Load()
	if h == nil || h.openLate == nil {
		return 0
	}
	return h.openLate(p)
}

func (s *hookRun) RootDelay(r uint32, p peer.ID) time.Duration {
	if h := s.hooks.Load(); h != nil && h.rootDelay != nil {
		return h.rootDelay(r, p)
	}
	return 0
}

func (s *hookRun) SpreadLate() time.Duration {
	if h := s.hooks.Load(); h != nil && h.spreadLate != nil {
		return h.spreadLate()
	}
	return 0
}

func (s *hookRun) AttestNone(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.attestNone != nil && h.attestNone(r)
}

func (s *hookRun) SilentAll(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.silentAll != nil && h.silentAll(r)
}

// FinalSigned shows a test this leader's signed final descriptor.
func (s *hookRun) FinalSigned(sd *wire.Signed) {
	if h := s.hooks.Load(); h != nil && h.finalSigned != nil {
		h.finalSigned(sd)
	}
}

// SyncPoked tells a test that this server's certificate sync was poked.
func (s *hookRun) SyncPoked() {
	if h := s.hooks.Load(); h != nil && h.syncPoked != nil {
		h.syncPoked()
	}
}

// CertChecked tells a test that c's signatures are checked here.
func (s *hookRun) CertChecked(c *wire.Cert) {
	if h := s.hooks.Load(); h != nil && h.certChecked != nil {
		h.certChecked(c)
	}
}

// PushBack tells a test that a push-back of n to to starts.
func (s *hookRun) PushBack(to peer.ID, n uint64) {
	if h := s.hooks.Load(); h != nil && h.pushBack != nil {
		h.pushBack(to, n)
	}
}

func (s *hookRun) SilentLack(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.silentLack != nil && h.silentLack(r)
}
