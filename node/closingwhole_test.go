//go:build riffletest

package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestClosingDeliveredNotWhole: a chain server that signed a round's
// final list but never got it (here: the list taken away before the
// record comes) is handed S_0's closing record, signed by all. The store's
// closing records mark an epoch taken whole (catchup.go skips it), so the
// record goes there only if every round it states published has its list
// here, as for a record the server assembles itself (closings.assemble).
// Before, onClosing (now closings.onRecord) stored S_0's record without that check.
func TestClosingDeliveredNotWhole(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		p := testParams(4)
		tn := startAnonNet(t, 3, 0, 2, p, nil)
		var mu sync.Mutex
		var victim peer.ID // the first server other than S_0 the record would go to
		for _, s := range tn.servers {
			s.hooks.Store(&serverHooks{
				closingTo: func(q peer.ID) bool {
					mu.Lock()
					defer mu.Unlock()
					if victim == "" && q != s.ID() {
						victim = q
					}
					return q != victim
				},
				closingSigTo: func(peer.ID) bool { return false },
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		tn.startPair(ctx, t, nil)
		var ep [32]byte
		var s0, v *Server
		if err := wait.Until(ctx, 40*time.Second, func() bool {
			for _, s := range tn.servers {
				for _, es := range s.Snapshot().Epochs {
					if es.Position == 0 && es.Ended && es.Listed == es.Rounds {
						if _, err := s.store.Closing(es.ID); err == nil {
							ep, s0 = es.ID, s
							return true
						}
					}
				}
			}
			return false
		}); err != nil {
			t.Fatal("no epoch ran to its end")
		}
		mu.Lock()
		for _, s := range tn.servers {
			if s.ID() == victim {
				v = s
			}
		}
		mu.Unlock()
		if v == nil {
			t.Fatal("no server was left without the record")
		}
		rec, err := s0.store.Closing(ep)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.store.Closing(ep); err == nil {
			t.Fatal("the victim holds the record already")
		}
		// The victim signed round 1's list; it loses it, as if its
		// delivery never came.
		v.mu.Lock()
		e := v.epochs[ep]
		if e == nil || e.rounds[1] == nil || e.rounds[1].list == nil {
			v.mu.Unlock()
			t.Fatal("the victim holds no list of round 1")
		}
		e.rounds[1].list = nil
		v.mu.Unlock()
		if _, _, err := v.closing.onRecord(s0.ID(), rec); err != nil {
			t.Fatalf("closing record refused: %v", err)
		}
		if _, err := v.store.Closing(ep); err == nil {
			t.Error("a closing record stored as whole by a server that lacks a published round's list")
		}
		v.mu.Lock()
		closed := e.closing.Closed()
		v.mu.Unlock()
		if closed {
			t.Error("the epoch is marked closed here without its lists")
		}
	})
}
