package evidence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// Evidence delivery (§8): public evidence of a fault (two signed roots,
// two signed onions, a malformed signed batch) is sent to every other
// chain server so that each checks it and names the culprit itself. One
// attempt is not enough: a loaded or briefly unreachable server would
// never name the culprit, so delivery is retried with backoff until every
// server acknowledges or Deadline passes (Config.Backoff, BackoffMax).
// Receivers acknowledge a repeat without acting on it again (the epoch's
// named flags).
const Deadline = transport.BulkTimeout // all attempts to one server

// DeliverAll runs send for every peer concurrently, retrying each until it
// succeeds or ctx ends (backoff from first, doubling up to most, between
// attempts). It returns the first peer's error of those that never
// succeeded, or nil once every peer acknowledged.
func DeliverAll(ctx context.Context, peers []peer.ID, first, most time.Duration, send func(context.Context, peer.ID) error) error {
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait := first
			for attempt := 1; ; attempt++ {
				err := send(ctx, p)
				if err == nil {
					errs[i] = nil
					return
				}
				errs[i] = fmt.Errorf("node: %s, attempt %d: %w", p.ShortString(), attempt, err)
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				wait = min(2*wait, most)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SendToChain delivers a message to every server of chain other than
// this one and the one at position skip (-1: none), retrying each until
// it acknowledges or deadline passes. Without the server's lock.
func (s *Service) SendToChain(chain []peer.ID, proto protocol.ID, typ wire.Type, body []byte, perTry, deadline time.Duration, skip int) error {
	var to []peer.ID
	for i, p := range chain {
		if p != s.Self && i != skip {
			to = append(to, p)
		}
	}
	ctx, cancel := context.WithTimeout(s.Ctx, deadline)
	defer cancel()
	return DeliverAll(ctx, to, s.Backoff, s.BackoffMax, func(ctx context.Context, p peer.ID) error {
		_, err := s.h.Call(ctx, p, transport.Request{Proto: proto, Type: typ, Body: body, Timeout: perTry})
		return err
	})
}
