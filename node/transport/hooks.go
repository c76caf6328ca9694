//go:build !riffletest

package transport

import "github.com/riffle-net/riffle/internal/wire"

// The receive path's test hook, as node's (node/hooks.go): empty here, so
// the compiler inlines it away; builds with the tag riffletest take
// hooks_riffletest.go instead.

const hooksBuilt = false

func hookRecv(Host, wire.Type, []byte) {}
