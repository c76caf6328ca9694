package waitline

import (
	"fmt"
	"sync"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

// NewNotes returns the notes of a client whose jobs run only in epochs
// with at least minAnon clients registered through servers it trusts.
func NewNotes(minAnon int) *Notes {
	return &Notes{minAnon: minAnon}
}

// Notes is what a client notes of its epochs for its status and for the
// line a waiting job shows, under its own lock; Reason calls holding with
// it held, the rest nothing outside it.
type Notes struct {
	minAnon int // the smallest trusted anonymity set jobs run in

	mu sync.Mutex
	// trusted is the current epoch's anonymity set counted over the
	// servers this client trusts (node/client's client_anon.go).
	trusted int
	// When the current epoch began, the round count then and the chunks
	// uploaded and fetched before it; when the last one ended and how long
	// it lasted.
	at              time.Time
	rounds0, moved0 int
	end             time.Time
	last            time.Duration
	// waiting is why no epoch runs; gstate the primary's last answer on
	// the group's state, at gstateAt (node's waitstate.go).
	waiting  string
	gstate   wire.State
	gstateAt time.Time
	// joining is the number of the epoch this client registers in, until
	// it holds the final descriptor or gives up (0: none); tookPart the
	// number of the last epoch it held the final descriptor of.
	joining, tookPart uint64
}

// Begin notes the start of the epoch of the given number, rounds and moved
// the client's counts of rounds and of chunks moved then.
func (n *Notes) Begin(number uint64, rounds, moved int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.at, n.rounds0, n.moved0, n.waiting = time.Now(), rounds, moved, ""
	n.tookPart = max(n.tookPart, number)
}

// Started is what Begin noted.
func (n *Notes) Started() (at time.Time, rounds0, moved0 int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.at, n.rounds0, n.moved0
}

// Ended notes the end of the epoch taken part in.
func (n *Notes) Ended() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.end = time.Now()
	if !n.at.IsZero() {
		n.last = n.end.Sub(n.at)
	}
}

// EpochLen is how long the last epoch taken part in lasted.
func (n *Notes) EpochLen() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last
}

// Join notes the number of the epoch the client registers in (0: none).
func (n *Notes) Join(number uint64) {
	n.mu.Lock()
	n.joining = number
	n.mu.Unlock()
}

// SetWait notes why the client is not in an epoch and reports whether
// that changed.
func (n *Notes) SetWait(why string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := n.waiting != why
	n.waiting = why
	return changed
}

// SetState notes the primary's answer on the group's state.
func (n *Notes) SetState(st wire.State) {
	n.mu.Lock()
	n.gstate, n.gstateAt = st, time.Now()
	n.mu.Unlock()
}

// SetTrusted notes the current epoch's anonymity set over trusted servers.
func (n *Notes) SetTrusted(k int) {
	n.mu.Lock()
	n.trusted = k
	n.mu.Unlock()
}

// Hold reports whether the current epoch's anonymity set, counted over
// the servers this client trusts (node/client's client_anon.go), is below the user's
// minimum: jobs then wait, and the client sends cover.
func (n *Notes) Hold() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.trusted < n.minAnon
}

// Reason says what a job of a client in an epoch (inEpoch) or between
// epochs waits for, holding the line of the presence rule at epochs of
// about epochLen ("" if jobs may run).
func (n *Notes) Reason(inEpoch bool, holding func(epochLen time.Duration) string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if inEpoch {
		if n.trusted < n.minAnon {
			return fmt.Sprintf("holding the job: this epoch has %d clients registered through servers this client trusts, below the minimum of %d asked for (--min-anonymity); sending cover until a larger epoch", n.trusted, n.minAnon)
		}
		return holding(n.last)
	}
	w := Between{Waiting: n.waiting, State: n.gstate, StateAt: n.gstateAt, EpochEnd: n.end, Joining: n.joining, TookPart: n.tookPart}
	return w.Reason(time.Now())
}
