//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"math"
	"testing"
	"time"
)

// TestPresenceDraw (§5.4 v3): the wait before a job and before leaving is
// 2 + G full epochs, G geometric with p = ½, capped at 8: every value's
// frequency within 5 standard deviations of its probability, whatever
// the client does (the draw reads only random bytes).
func TestPresenceDraw(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const draws = 64000
		count := map[int]int{}
		for range draws {
			w, err := drawPresence(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if w < PresenceMin || w > PresenceMax {
				t.Fatalf("wait %d outside [%d, %d]", w, PresenceMin, PresenceMax)
			}
			count[w]++
		}
		for w := PresenceMin; w <= PresenceMax; w++ {
			p := math.Pow(0.5, float64(w-PresenceMin+1))
			if w == PresenceMax {
				p *= 2 // the cap takes the tail
			}
			mean, sd := draws*p, math.Sqrt(draws*p*(1-p))
			if math.Abs(float64(count[w])-mean) > 5*sd {
				t.Fatalf("wait %d drawn %d times, want about %.0f", w, count[w], mean)
			}
		}
	})
}

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
		c.SetJobWait(2)
		done := make(chan error, 1)
		go func() {
			_, err := c.Share(ctx, bytes.NewReader(anonRand(t, 1000)), "late.bin", false)
			done <- err
		}()
		for {
			st := c.Stats()
			full := c.FullEpochs()
			if full >= 2 {
				break
			}
			if st.Uploaded != 0 {
				t.Fatalf("uploaded after %d full epochs, wait 2", full)
			}
			select {
			case err := <-done:
				t.Fatalf("share done after %d full epochs (wait 2): %v", full, err)
			case <-ctx.Done():
				t.Fatal("no 2 full epochs")
			case <-time.After(20 * time.Millisecond):
			}
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
