package node

import (
	"github.com/riffle-net/riffle/node/transport"
)

// DefaultListen is where a fresh server listens: loopback only. Operators
// open it to the world with explicit --listen addresses (docs/proto-node.md).
var DefaultListen = transport.DefaultListen

// defaultNetwork carries the streams of a server or client whose
// configuration names no network: libp2p. Tests in virtual time give each
// server and client the in-memory network of their bubble in its
// configuration instead (export_test.go).
var defaultNetwork transport.Network = transport.Libp2p{}

// ResourceLimits returns the libp2p limit configuration riffle servers use.
var ResourceLimits = transport.ResourceLimits
