package node

import (
	"github.com/riffle-net/riffle/node/transport"
)

// DefaultListen is where a fresh server listens: loopback only. Operators
// open it to the world with explicit --listen addresses (docs/proto-node.md).
var DefaultListen = transport.DefaultListen

// ResourceLimits returns the libp2p limit configuration riffle servers use.
var ResourceLimits = transport.ResourceLimits
