//go:build !riffletest

package client

import "github.com/riffle-net/riffle/node/client/internal/hooks"

// The client's hook points are internal/hooks's, empty in the binary
// (node's hooks.go says why).

// ClientHookCfg is what a test sets in a ClientConfig: nothing here.
type ClientHookCfg = hooks.Config

// clientHookState is what a test reaches of a running client: nothing
// here.
type clientHookState struct{}

func (*clientHookState) bind(*hooks.Hooks) {}
