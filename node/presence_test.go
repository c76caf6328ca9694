//go:build riffletest

package node

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestJobWaitsForPresence (§5.4 v3): a client's job sends nothing real
// before the client has been present for its drawn number of full epochs
// (here set to 2); then the job runs.
func TestJobWaitsForPresence(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 3, 1, 2, testParams(8), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Inspect().SetJobWait(2)
		done := make(chan error, 1)
		go func() {
			_, err := c.Share(ctx, bytes.NewReader(anonRand(t, 1000)), "late.bin", false)
			done <- err
		}()
		if err := wait.Until(ctx, 2*time.Minute, func() bool {
			full := c.Inspect().FullEpochs()
			if full >= 2 {
				return true
			}
			if c.Stats().Uploaded != 0 {
				t.Fatalf("uploaded after %d full epochs, wait 2", full)
			}
			select {
			case err := <-done:
				t.Fatalf("share done after %d full epochs (wait 2): %v", full, err)
			default:
			}
			return false
		}); err != nil {
			t.Fatal("no 2 full epochs")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// Leave with a job just done waits (at least PresenceMin more full
		// epochs); a cancelled wait closes at once.
		lctx, lcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer lcancel()
		start := time.Now()
		if err := c.Leave(lctx); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < 250*time.Millisecond {
			t.Fatal("left at once after a job")
		}
	})
}
