package nodetest

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/riffle-net/riffle/node/transport/memnet"
)

// DefaultLink is the link of a virtual network: a millisecond each way,
// no bandwidth bound.
var DefaultLink = memnet.Link{Latency: time.Millisecond}

// Virtual runs f in a testing/synctest bubble with a fresh in-memory
// network: every timer, deadline and sleep of the servers and clients f
// starts on it (Config.Network = net) runs in virtual time, which moves
// only when every goroutine of the bubble waits. f's t must not call Run
// or Parallel; a test of many cases calls Virtual in each subtest.
func Virtual(t *testing.T, f func(t *testing.T, net *memnet.Net)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		f(t, memnet.New(DefaultLink, 1))
	})
}
