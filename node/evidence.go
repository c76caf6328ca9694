package node

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
// server acknowledges or evidenceDeadline passes (the back-off:
// Tunables.EvidenceBackoff, EvidenceBackoffMax). Receivers acknowledge a
// repeat without acting on it again (the epoch's named flags).
const evidenceDeadline = transport.BulkTimeout // all attempts to one server

// deliverAll runs send for every peer concurrently, retrying each until it
// succeeds or ctx ends (backoff from first, doubling up to most, between
// attempts). It returns the first peer's error of those that never
// succeeded, or nil once every peer acknowledged.
func deliverAll(ctx context.Context, peers []peer.ID, first, most time.Duration, send func(context.Context, peer.ID) error) error {
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

// sendEvidence delivers evidence of type typ (round protocol) to every
// chain server of e other than this one and the culprit (chain position;
// -1 for a client's fault), retrying until each acknowledges or
// evidenceDeadline passes (see above). The culprit is left out: it has no
// reason to acknowledge, and the sender would wait out the deadline on
// it. Call after naming the culprit here, without s.mu.
func (s *Server) sendEvidence(e *sepoch, typ wire.Type, body []byte, perTry time.Duration, culprit int) error {
	return s.sendToChain(e, ProtoRound, typ, body, perTry, evidenceDeadline, culprit)
}

// sendToChain delivers a message to every chain server of e other than
// this one and the one at position skip, retrying each until it
// acknowledges or deadline passes. Without s.mu.
func (s *Server) sendToChain(e *sepoch, proto protocol.ID, typ wire.Type, body []byte, perTry, deadline time.Duration, skip int) error {
	var others []peer.ID
	for i, p := range e.final.Chain {
		if p != s.h.ID() && i != skip {
			others = append(others, p)
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, deadline)
	defer cancel()
	return deliverAll(ctx, others, s.cfg.Timing.EvidenceBackoff, s.cfg.Timing.EvidenceBackoffMax, func(ctx context.Context, p peer.ID) error {
		_, err := transport.Call(ctx, s.h, p, transport.Request{Proto: proto, Type: typ, Body: body, Timeout: perTry})
		return err
	})
}

// fromChain reports whether p is a server of e's chain: only they send
// evidence of the epoch's faults.
func fromChain(e *sepoch, p peer.ID) bool {
	for _, q := range e.final.Chain {
		if q == p {
			return true
		}
	}
	return false
}

// stepEpoch is the epoch of a step request (a walk's or a reveal's) and
// checks who asks: a server of its chain, asking this server for its own
// position t.
func (s *Server) stepEpoch(id [32]byte, from peer.ID, t uint16, what string) (*sepoch, error) {
	e, err := s.epochFor(id)
	if err != nil {
		return nil, err
	}
	if !fromChain(e, from) || int(t) != e.pos {
		return nil, fmt.Errorf("node: %s step asked of the wrong server", what)
	}
	return e, nil
}
