//go:build riffletest

package client

import (
	"sync/atomic"

	"github.com/riffle-net/riffle/node/client/internal/hooks"
)

// The client's hook points of the tests are internal/hooks's; these are
// their names in this package, where the tests set them.

type (
	// ClientHookCfg is what a test sets in a ClientConfig (riffletest
	// builds only; empty in the binary, client_hooks.go).
	ClientHookCfg = hooks.Config
	// ClientHooks let a test make a client misbehave.
	ClientHooks = hooks.ClientHooks
	// ClientObserver is what the anonymity tests learn from a client.
	ClientObserver = hooks.ClientObserver
	// DupClientTest are a client's hooks for the duplicate-share tests.
	DupClientTest = hooks.DupClientTest
	DupAnswer     = hooks.DupAnswer
)

const (
	DupHonest = hooks.DupHonest
	DupSilent = hooks.DupSilent
	DupForge  = hooks.DupForge
)

// clientHookState: hooks are set by a test on a running client.
type clientHookState struct {
	Hooks *atomic.Pointer[ClientHooks]
}

func (s *clientHookState) bind(h *hooks.Hooks) { s.Hooks = &h.Misbehave }
