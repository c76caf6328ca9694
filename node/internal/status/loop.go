package status

import (
	"context"
	"log/slog"
	"time"
)

// Sampler is what the watch loop samples of the server.
type Sampler interface {
	// Live is the live roster but this server: peer id → nick.
	Live() map[string]string
	// Current is the current epoch and its count of rounds with a final
	// list; ok is false while none runs.
	Current() (epoch [32]byte, high uint32, ok bool)
}

// Loop samples s every period until ctx ends: it logs the servers that
// joined or left the roster (with the roster's size, this server
// included, against minServers) and times the current epoch's rounds.
func (w *Watch) Loop(ctx context.Context, every time.Duration, s Sampler, log *slog.Logger, minServers int) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		w.Sample(s, log, minServers)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample is one of Loop's samples.
func (w *Watch) Sample(s Sampler, log *slog.Logger, minServers int) {
	now := s.Live()
	joined, left := w.Roster(now)
	for id, nick := range joined {
		log.Info("server joined the roster", "peer", id, "nick", nick, "roster", len(now)+1, "min_servers", minServers)
	}
	for id, nick := range left {
		log.Info("server left the roster", "peer", id, "nick", nick, "roster", len(now)+1, "min_servers", minServers)
	}
	if id, high, ok := s.Current(); ok {
		w.Rounds(id, high, time.Now())
	}
}
