//go:build riffletest

package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/leader"
)

// leaderHooks are the leader's hook points (leader.Hooks); only in the
// tests' build, so the binary links none (TestBinaryHasNoTestHooks).
func (s *Server) leaderHooks() leader.Hooks { return leadHooks{s} }

// leadHooks forwards the leader's hook points to this server's hooks.
type leadHooks struct{ s *Server }

func (h leadHooks) LeaderGap(n uint64, g []wire.Cert) []wire.Cert {
	return h.s.hookRun().LeaderGap(n, g)
}
func (h leadHooks) LeaderWindow(n uint64, w []wire.WindowRef) []wire.WindowRef {
	return h.s.hookRun().LeaderWindow(n, w)
}
func (h leadHooks) OpenLate(p peer.ID) time.Duration { return h.s.hookRun().OpenLate(p) }
func (h leadHooks) SignedTo(final bool, chain []peer.ID) []peer.ID {
	return h.s.hookRun().SignedTo(final, chain)
}
func (h leadHooks) HoldOpen() bool              { return h.s.hookRun().HoldOpen() }
func (h leadHooks) FinalSigned(sd *wire.Signed) { h.s.hookRun().FinalSigned(sd) }
func (h leadHooks) CheatKeys(chain []peer.ID, keys [][32]byte, cl *leader.Closed) [][32]byte {
	return h.s.hookCfg().CheatKeys(chain, keys, cl)
}
func (h leadHooks) CheatList(rl *wire.RegList) { h.s.hookCfg().CheatList(rl) }
