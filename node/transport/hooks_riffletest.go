//go:build riffletest

package transport

import (
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

const hooksBuilt = true

// RecvHook sees every frame body a host receives through this package:
// each request (ServeSegments) and each reply (Call). self is the
// receiving host.
var RecvHook atomic.Pointer[func(self peer.ID, t wire.Type, body []byte)]

func hookRecv(h Host, t wire.Type, body []byte) {
	if f := RecvHook.Load(); f != nil {
		(*f)(h.ID(), t, body)
	}
}
