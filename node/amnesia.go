package node

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// A server that lost its records (docs/protocol.md §3, "Lost records"):
// its identity is there but no certificate nor epoch number is, so it no
// longer knows what it signed. Were it to sign again, it could sign a
// second entry of a number it already signed (a founder re-signing
// number 1 over a chain a corrupt founder proposes) and certify a fork.
// It signs nothing (no Prepare, final descriptor, timeout, attestation,
// would-serve, nor a turn as leader) until the log has moved past its
// window: once it has caught up to the group's newest certificate T, a
// certificate of T+1 made without it; or, if the group has none, once
// more than half of the founders other than itself say they hold none.

// errLostRecords is the refusal of a server that lost its records.
var errLostRecords = errors.New("node: this server lost its records: it signs nothing until the group's log moves past its window")

// amnesiaState: on while the server signs nothing; until is the number
// whose certificate ends it (math.MaxUint64 while unknown).
type amnesiaState struct {
	mu    sync.Mutex
	on    bool
	until uint64
}

// lostRecords is errLostRecords while this server signs nothing.
func (s *Server) lostRecords() error {
	a := &s.amnesia
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.on {
		return nil
	}
	if a.until != math.MaxUint64 && s.cert.Top() >= a.until {
		a.on = false
		s.log.Info("records lost: the log moved past this server's window, it signs again", "number", a.until)
		return nil
	}
	return errLostRecords
}

// amnesiaLoop ends the amnesia as the package comment says, checking
// every CertSyncStart. Only for a group with founders.
func (s *Server) amnesiaLoop(ctx context.Context) {
	for {
		if s.lostRecords() == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.Timing.CertSyncStart):
		}
		if top := s.cert.Top(); top > 0 {
			s.amnesia.mu.Lock()
			if s.amnesia.until == math.MaxUint64 {
				s.amnesia.until = top + 1
				s.log.Warn("records lost: caught up, signing nothing until the next number is certified", "number", top+1)
			}
			s.amnesia.mu.Unlock()
			continue
		}
		if s.foundersHoldNone(ctx) {
			s.amnesia.mu.Lock()
			s.amnesia.on = false
			s.amnesia.mu.Unlock()
			s.log.Info("records lost: the founders hold no certificate, this server signs again")
			return
		}
	}
}

// foundersHoldNone asks every other founder for its certificates from
// number 1 and reports whether more than half of the founders other than
// this server answered with none (and none answered with any).
func (s *Server) foundersHoldNone(ctx context.Context) bool {
	var others []peer.ID
	for p := range s.who.Founders() {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	if len(others) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
	defer cancel()
	reps, _ := s.each(ctx, others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeCertReq, Body: (&wire.CertReq{From: 1}).Marshal(), Timeout: transport.ShortTimeout})
	none := 0
	for _, rep := range reps {
		if rep == nil {
			continue
		}
		var page wire.Certs
		if page.Unmarshal(rep) != nil {
			continue
		}
		if len(page.Certs) > 0 {
			return false // the certificate loop takes them
		}
		none++
	}
	return 2*none > len(others)
}
