// Package waitline says what a client in no epoch waits for (docs/
// protocol.md §3 epochs, §5.4 presence; the group's state a primary
// answers, node's waitstate.go): a line for its user from the reason its
// last attempt failed, the primary's last answer on the group's state and
// the epochs it took part in or registers in. Between.Reason is a
// function of that state and the time: no I/O, no lock. Notes keeps that
// state, and what the client's status says of its epochs, under a lock
// of its own (notes.go).
package waitline

import (
	"fmt"
	"strings"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Between is what a client knows between epochs.
type Between struct {
	// Waiting is why the last attempt failed (Line), "" if none did.
	Waiting string
	// State is the primary's last answer on the group's state, at
	// StateAt.
	State   wire.State
	StateAt time.Time
	// EpochEnd is when the last epoch taken part in ended.
	EpochEnd time.Time
	// Joining is the number of the epoch the client registers in (0:
	// none); TookPart, of the last epoch it held the final descriptor of.
	Joining, TookPart uint64
}

// Reason says what a client in no epoch waits for at now.
func (b *Between) Reason(now time.Time) string {
	// A refusal of this client's own settings (a required server
	// missing, a budget drop) says more than the group's state; any other
	// failed attempt says less.
	if b.Waiting != "" && strings.Contains(b.Waiting, "refused") {
		return b.Waiting
	}
	if !b.StateAt.IsZero() && now.Sub(b.StateAt) <= StateFresh {
		return b.group(now)
	}
	if b.Waiting != "" {
		return b.Waiting
	}
	if !b.EpochEnd.IsZero() && now.Sub(b.EpochEnd) < BetweenEpochs {
		return "" // the next epoch is on its way
	}
	return Hint
}

// StateFresh is how long an answer describes the group.
const StateFresh = 3 * proto.StateEvery

// BetweenEpochs is how long after an epoch's end the wait for the next
// is not worth a word: registration and setup take about that long.
const BetweenEpochs = 5 * time.Second

// Line turns the reason a client left or refused an epoch into what a
// waiting user reads.
func Line(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n") // libp2p lists every address tried
	msg = strings.ReplaceAll(msg, "node: ", "")
	return fmt.Sprintf("no epoch: %s; retrying", msg)
}

// Hint is the hint of a job waiting for an epoch to open.
const Hint = "waiting for the primary to open an epoch: it opens one when its chain has its minimum of servers and at least its minimum of clients (2 by default: this client and one other, with a data directory of its own) have asked to join"

// group says what the group's state makes a client in no epoch wait for
// at now, and about how long; "" when no fresh state says.
func (b *Between) group(now time.Time) string {
	if b.StateAt.IsZero() || now.Sub(b.StateAt) > StateFresh {
		return ""
	}
	st := b.State
	if b.Joining != 0 && st.Number == b.Joining && st.Phase != wire.PhaseIdle {
		// Its own registration: say only what keeps the epoch from
		// starting.
		if st.Phase == wire.PhaseOpen && st.Registered < st.MinClients {
			return fmt.Sprintf("waiting for clients: registered in epoch %d (%d registered at the primary so far); it runs once at least %d clients register", st.Number, st.Registered, st.MinClients)
		}
		return ""
	}
	recent := !b.EpochEnd.IsZero() && now.Sub(b.EpochEnd) < BetweenEpochs
	if st.Phase != wire.PhaseIdle && st.Number <= b.TookPart {
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
			line += fmt.Sprintf(", about %s left", RoundUp(left))
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
	if recent || st.SinceEnd != wire.NoEnd && time.Duration(st.SinceEnd)*time.Millisecond < BetweenEpochs {
		return "" // the next epoch is on its way
	}
	return fmt.Sprintf("waiting for clients: the primary opens an epoch once at least %d clients wait for one (%d wait there now: this one, and each other client with a data directory of its own)", st.MinClients, st.Waiting)
}

// RoundUp rounds d for a person: seconds under two minutes, else minutes.
func RoundUp(d time.Duration) time.Duration {
	if d < 2*time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}
