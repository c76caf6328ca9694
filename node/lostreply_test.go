package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
)

// TestOpenSignatureLost (§3): one server's signature of the first open
// descriptor is lost on its way back to the leader. The servers that
// signed have taken the number and never vote its timeout, so the leader
// aborts it, and epochs go on. Without the abort the group stayed at that
// number for good (TestSwarm seed 6: one stream lost to a lossy link).
func TestOpenSignatureLost(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var lost atomic.Int32
		testMemnet(t).LoseReplies(func(_, _ peer.ID, proto protocol.ID, typ byte) bool {
			// The first signature asked for is the open descriptor's.
			return proto == ProtoEpoch && wire.Type(typ) == wire.TypeSignReq && lost.CompareAndSwap(0, 1)
		})
		tn := startAnonNet(t, 3, 2, 2, testParams(4), nil)
		epochs := func() int { return tn.clients[0].Stats().Epochs }
		if err := wait.Until(context.Background(), 5*time.Minute, func() bool { return epochs() >= 3 }); err != nil {
			t.Fatalf("%d epochs after a lost signature (%d lost): %v", epochs(), lost.Load(), err)
		}
		if lost.Load() != 1 {
			t.Fatal("no signature was lost")
		}
	})
}
