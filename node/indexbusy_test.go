//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestIndexBusyAskedAgain (issue 28): every client of a primary syncs the
// index at the same checkpoint rounds, and at n = 200 a primary's 67 or
// so clients are more than its maxIndexServing slots, so a third to a
// half of them were refused, their checkpoint's manifests left to the
// next epoch. A client now asks a busy server again after a random
// delay: with every slot of its primary held for a second, its sync ends
// within the checkpoint's half for the primary.
func TestIndexBusyAskedAgain(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 2, 1, 1, testParams(4), nil)
		s, c := tn.servers[0], tn.clients[0]
		const held = time.Second
		g := &s.indexSlots
		g.mu.Lock()
		g.all += maxIndexServing
		g.mu.Unlock()
		freed := make(chan struct{})
		go func() {
			defer close(freed)
			time.Sleep(held)
			g.mu.Lock()
			g.all -= maxIndexServing
			g.mu.Unlock()
		}()
		defer func() { <-freed }()
		ctx, cancel := context.WithTimeout(context.Background(), proto.CheckpointSyncTime/2)
		defer cancel()
		start := time.Now()
		_, _, err := c.SyncIndex(ctx)
		took := time.Since(start)
		t.Logf("the primary's %d index slots held for %v: the sync ended after %v: %v", maxIndexServing, held, took.Round(time.Millisecond), err)
		if err != nil {
			t.Fatalf("a client's sync with its primary's slots held for %v: %v", held, err)
		}
		if took < held {
			t.Fatalf("the sync ended after %v, before the slots were free", took)
		}
	})
}
