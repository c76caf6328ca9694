package node

import (
	"github.com/riffle-net/riffle/node/transport"
)

// DefaultListen is where a fresh server listens: loopback only. Operators
// open it to the world with explicit --listen addresses (docs/proto-node.md).
var DefaultListen = transport.DefaultListen

// defaultNetwork carries the streams of a server or client whose
// configuration names no network: libp2p. The package's tests run on an
// in-memory network in virtual time by setting it (export_test.go); they
// run one at a time.
var defaultNetwork transport.Network = transport.Libp2p{}

// ResourceLimits returns the libp2p limit configuration riffle servers use.
var ResourceLimits = transport.ResourceLimits
