package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// What a client in no epoch waits for (docs/protocol.md §4.1): its primary
// says what the group is doing (wire.State), and the client turns that into
// the line its user reads, with an estimate. Every client that waits for an
// epoch asks at random intervals around stateEvery, whether its user has a
// job or not, so the question tells nobody anything; the answer only reaches
// the user (waitReason), never what the client sends.

// stateEvery is the mean period of a waiting client's state requests: one
// for every client (anonymity), so a protocol rule, not a Tunables field.
const stateEvery = 5 * time.Second

// onStateReq answers a State. Any peer may ask (a client asks before it
// registers); the answer is a few dozen bytes built from counters, and
// takes one of the index pages' slots while it is written.
func (s *Server) onStateReq(ctx context.Context, from peer.ID) (wire.Type, []byte, error) {
	if err := s.enterIndex(ctx, from); err != nil {
		return 0, nil, err
	}
	st := wire.State{Live: uint32(len(s.roster.live()) + 1), SinceEnd: wire.NoEnd}
	s.polls.mu.Lock()
	st.Waiting = uint32(s.polls.waitOpen)
	s.polls.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	st.MinServers, st.MinClients = uint32(s.cfg.MinServers), uint32(s.cfg.MinClients)
	if !s.lastEnd.IsZero() {
		st.SinceEnd = uint32(min(time.Since(s.lastEnd).Milliseconds(), int64(wire.NoEnd-1)))
	}
	var cur *sepoch
	for _, e := range s.epochs {
		if !e.ended && e.v != nil && (cur == nil || e.v.Desc.Number > cur.v.Desc.Number) {
			cur = e
		}
	}
	if cur == nil {
		return wire.TypeState, st.Marshal(), nil
	}
	st.Number, st.Rounds = cur.v.Desc.Number, cur.v.Desc.Params.Rounds
	switch {
	case !cur.regClosed:
		st.Phase, st.Registered = wire.PhaseOpen, uint32(len(cur.regs))
	case !cur.setupDone:
		st.Phase = wire.PhaseSetup
	default:
		st.Phase, st.Done = wire.PhaseRounds, min(cur.listHigh, st.Rounds)
		if st.Done > 0 && !cur.regDeadline.IsZero() {
			st.RoundMillis = uint32(min(time.Since(cur.regDeadline).Milliseconds()/int64(st.Done), 1<<31))
		}
	}
	return wire.TypeState, st.Marshal(), nil
}

// askState asks the primary for the group's state at random intervals
// until ctx ends, keeping the last answer for waitReason.
func (c *Client) askState(ctx context.Context) {
	for {
		// Uniform in [½, 1½]·stateEvery, from fresh randomness.
		d := stateEvery/2 + time.Duration(rand.Int64N(int64(stateEvery)))
		rep, err := c.call(ctx, request{Proto: ProtoClient, Type: wire.TypeStateReq, Timeout: shortTimeout})
		if err == nil {
			var st wire.State
			if st.Unmarshal(rep) == nil {
				c.mu.Lock()
				c.gstate, c.gstateAt = st, time.Now()
				c.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
	}
}

// stateFresh is how long an answer describes the group.
const stateFresh = 3 * stateEvery

// groupWait says what the group's state makes a client in no epoch wait
// for, and about how long; "" when no fresh state says. Call with c.mu held.
func (c *Client) groupWait() string {
	if c.gstateAt.IsZero() || time.Since(c.gstateAt) > stateFresh {
		return ""
	}
	st := c.gstate
	if c.joining != 0 && st.Number == c.joining && st.Phase != wire.PhaseIdle {
		// Its own registration: say only what keeps the epoch from
		// starting.
		if st.Phase == wire.PhaseOpen && st.Registered < st.MinClients {
			return fmt.Sprintf("waiting for clients: registered in epoch %d (%d registered at the primary so far); it runs once at least %d clients register", st.Number, st.Registered, st.MinClients)
		}
		return ""
	}
	recent := !c.epochEnd.IsZero() && time.Since(c.epochEnd) < betweenEpochs
	if st.Phase != wire.PhaseIdle && st.Number <= c.tookPart {
		// The epoch this client took part in, not over at the primary
		// yet: the state is older than what the client knows.
		return ""
	}
	switch st.Phase {
	case wire.PhaseRounds:
		if recent {
			return ""
		}
		line := fmt.Sprintf("waiting for the next epoch: epoch %d is running at the primary (round %d of %d", st.Number, st.Done, st.Rounds)
		if st.RoundMillis > 0 {
			left := time.Duration(st.Rounds-st.Done) * time.Duration(st.RoundMillis) * time.Millisecond
			line += fmt.Sprintf(", about %s left", roundUp(left))
		}
		return line + "); this client joins the one after it"
	case wire.PhaseSetup:
		if recent {
			return "" // between two epochs: the next is on its way
		}
		return fmt.Sprintf("waiting for the next epoch: epoch %d is in its setup at the primary and then runs %d rounds; this client joins the one after it", st.Number, st.Rounds)
	case wire.PhaseOpen:
		if recent {
			return ""
		}
		if st.Registered < st.MinClients {
			return fmt.Sprintf("waiting for clients: epoch %d is open for registrations at the primary (%d registered there so far); it runs once at least %d clients register", st.Number, st.Registered, st.MinClients)
		}
		return fmt.Sprintf("epoch %d is open for registrations at the primary (%d registered there so far); it starts when the registration window closes", st.Number, st.Registered)
	}
	if st.Live < st.MinServers {
		return fmt.Sprintf("waiting for servers: the primary sees %d of the %d servers a chain needs (--min-servers); an epoch opens once enough are up", st.Live, st.MinServers)
	}
	if recent || st.SinceEnd != wire.NoEnd && time.Duration(st.SinceEnd)*time.Millisecond < betweenEpochs {
		return "" // the next epoch is on its way
	}
	return fmt.Sprintf("waiting for clients: the primary opens an epoch once at least %d clients wait for one (%d wait there now: this one, and each other client with a data directory of its own)", st.MinClients, st.Waiting)
}

// roundUp rounds d for a person: seconds under two minutes, else minutes.
func roundUp(d time.Duration) time.Duration {
	if d < 2*time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}
