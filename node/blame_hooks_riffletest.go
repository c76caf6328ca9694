//go:build riffletest

package node

import (
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/roundblame"
)

// blameHooks are the walk's hook points (roundblame.Hooks); only in the
// tests' build, so the binary links none (TestBinaryHasNoTestHooks).
func (s *Server) blameHooks() roundblame.Hooks { return walkHooks{s} }

// walkHooks forwards the walk's hook points to this server's hooks.
type walkHooks struct{ s *Server }

func (h walkHooks) Liar() bool            { return h.s.hookRun().Liar() }
func (h walkHooks) LieDrop(r uint32) bool { return h.s.hookRun().LieDrop(r) }
func (h walkHooks) RefuseEvidence(t wire.Type) bool {
	return h.s.hookRun().RefuseEvidence(t)
}
