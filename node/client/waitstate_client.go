package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A client's view of its group's state between epochs (waitstate.go).

// askState asks the primary for the group's state at random intervals
// until ctx ends, keeping the last answer for waitReason.
func (c *Client) askState(ctx context.Context) {
	for {
		// Uniform in [½, 1½]·stateEvery, from fresh randomness.
		d := proto.StateEvery/2 + time.Duration(rand.Int64N(int64(proto.StateEvery)))
		rep, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeStateReq, Timeout: transport.ShortTimeout})
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
const stateFresh = 3 * proto.StateEvery

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
