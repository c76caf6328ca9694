package evidence

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestDeliverAllRetries: evidence delivery retries each server that fails
// until it acknowledges, leaves a server that acknowledged alone, and gives
// up on one that never does when the deadline passes, naming it.
func TestDeliverAllRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok, flaky, dead := peer.ID("ok"), peer.ID("flaky"), peer.ID("dead")
		var mu sync.Mutex
		tries := map[peer.ID]int{}
		send := func(_ context.Context, p peer.ID) error {
			mu.Lock()
			defer mu.Unlock()
			tries[p]++
			switch {
			case p == flaky && tries[p] <= 2, p == dead:
				return errors.New("lost")
			}
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := DeliverAll(ctx, []peer.ID{ok, flaky, dead}, 10*time.Millisecond, 80*time.Millisecond, send)
		if err == nil {
			t.Fatal("delivery to a server that never acknowledges reported success")
		}
		if strings.Count(err.Error(), "lost") != 1 {
			t.Fatalf("want one server that never acknowledged in the error: %v", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("delivery outlived its deadline: %v", took)
		}
		mu.Lock()
		nOK, nFlaky, nDead := tries[ok], tries[flaky], tries[dead]
		mu.Unlock()
		if nOK != 1 || nFlaky != 3 {
			t.Fatalf("tries: ok %d (want 1), flaky %d (want 3)", nOK, nFlaky)
		}
		// Backoff 10, 20, 40, 80, 80, … ms within 1 s: bounded, not a spin.
		if nDead < 5 || nDead > 20 {
			t.Fatalf("a dead server was tried %d times in 1 s", nDead)
		}
		if err2 := DeliverAll(context.Background(), []peer.ID{ok, flaky}, time.Millisecond, time.Millisecond, send); err2 != nil {
			t.Fatalf("every server acknowledged, yet: %v", err2)
		}
	})
}
