package localnet

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/riffle-net/riffle/node/client"
)

// keepGoingEvery is how often KeepGoing looks for paused jobs.
const keepGoingEvery = 500 * time.Millisecond

// KeepGoing plays, for the length of a bench or a demo, the user who lets
// every paused job of clients go on. A job pauses for its user when it spent its allowance
// of epochs or when its client sat an epoch out because no server gave the
// decoy window in time (node/client/presence.go); a loaded machine with a
// short registration window can cause the second, and clients in this
// process have nobody to run `riffle resume`, so without this a job would
// wait forever while cover rounds go on. Each resume is logged with its reason. stop
// ends it and returns how many jobs it resumed.
func KeepGoing(ctx context.Context, clients []*client.Client, log *slog.Logger) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	resumed := 0
	wg.Go(func() {
		t := time.NewTicker(keepGoingEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for i, c := range clients {
				for _, p := range c.Status().Paused {
					if n := c.Resume(p.ID); n > 0 {
						resumed += n
						if log != nil {
							log.Warn("paused job resumed for its user", "client", i, "reason", p.Reason)
						}
					}
				}
			}
		}
	})
	return func() int {
		cancel()
		wg.Wait()
		return resumed
	}
}
