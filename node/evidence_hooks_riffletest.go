//go:build riffletest

package node

import (
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/evidence"
)

// evidenceHooks are the evidence's hook points (evidence.Hooks); only in
// the tests' build, so the binary links none (TestBinaryHasNoTestHooks).
func (s *Server) evidenceHooks() evidence.Hooks { return chargeHooks{s} }

// chargeHooks forwards the evidence's hook points to this server's hooks.
type chargeHooks struct{ s *Server }

func (h chargeHooks) SpreadLate() time.Duration { return h.s.hookRun().SpreadLate() }
func (h chargeHooks) RefuseEvidence(t wire.Type) bool {
	return h.s.hookRun().RefuseEvidence(t)
}
