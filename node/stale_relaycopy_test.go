//go:build riffletest

package node

import (
	"testing"
	"time"
)

// TestS0RootRelayedCopyOpensEverywhere (§5.2): m = 5, S_0 and S_4 corrupt
// (a minority). As TestS0RootAheadFramesNoOne "stalled", but S_0's part of
// round q reaches S_1 handed on by S_4, a copy, not from S_0. A server
// relays S_0's part whoever handed it over: relaying only a part that came
// from S_0 itself left q open at S_1 alone, and S_1 was charged at every
// honest server.
func TestS0RootRelayedCopyOpensEverywhere(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		sn := startS0Net(t, 5, 2000)
		id, chain := sn.id, sn.chain
		bad, h, acc := sn.at(0), sn.at(1), sn.at(4)
		top := sn.passedTop(t)
		q, _ := sn.ahead(t, h)
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r > top }})
		// S_4 (corrupt) hands S_0's part to S_1 alone.
		if err := sendRoot(acc, h, sn.rootOf(t, q, 7)); err != nil {
			t.Fatalf("root to S_1: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		for i, o := range chain[1:4] {
			s := sn.byID[o]
			s.mu.Lock()
			_, open := s.epochs[id].openAt[q]
			s.mu.Unlock()
			t.Logf("S_%d: round %d open: %v", i+1, q, open)
		}
		sn.restartS0(t)
		honest := chain[1:4]
		sn.waitEnded(t, honest)
		sn.checkCharges(t, honest, false)
	})
}
