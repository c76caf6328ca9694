//go:build riffletest

package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestRepeatedBatchMixedOnce: every server sends each of its signed
// batches twice (a retry, or a replay by the sender): each server mixes
// each round once and publishes it once, and rounds go on. Before, a
// repeated batch was mixed and passed on again, and the last server's
// payloads were stored twice.
func TestRepeatedBatchMixedOnce(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs a loopback network")
		}
		var mu sync.Mutex
		count := map[string]int{}
		p := testParams(6)
		tn := startAnonNet(t, 3, 3, 3, p, func(i int, c *ServerConfig) {
			c.observe = &testObserver{Stage: func(epoch [32]byte, r uint32, stage string) {
				mu.Lock()
				count[fmt.Sprintf("%x/%d/%d/%s", epoch[:4], i, r, stage)]++
				mu.Unlock()
			}}
		})
		for _, s := range tn.servers {
			s.hooks.Store(&serverHooks{repeatOut: func(uint32) bool { return true }})
		}
		if err := wait.Until(context.Background(), 60*time.Second, func() bool { return tn.clients[0].Stats().Rounds >= 5 }); err != nil {
			t.Fatal("rounds did not run with every batch sent twice")
		}
		mu.Lock()
		defer mu.Unlock()
		mixes, pubs := 0, 0
		for k, n := range count {
			if n != 1 {
				t.Errorf("%s ran %d times", k, n)
			}
			if len(k) > 8 && k[len(k)-3:] == "mix" {
				mixes++
			} else {
				pubs++
			}
		}
		if mixes < 5*3 || pubs < 5*3 {
			t.Fatalf("only %d mix steps and %d publications seen", mixes, pubs)
		}
	})
}
