package slots

import (
	"context"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// Window is the client and the server window slots, and the
// would-serve questions that fetch a window (package wouldserve): Asking
// holds those fetching, one an asker.
type Window struct {
	Clients, Asking Table
	Servers         Servers
	// asked holds, for each asker and number whose would-serve window
	// this server fetched, the asker's fetches (Asked): entries of
	// numbers past pruned once their fetch ended, at most 2·MaxAskers.
	// said holds the questions of the next number answered yes after a
	// fetch, at most MaxAskers.
	askedMu sync.Mutex
	asked   map[askKey]*asker
	said    map[[32]byte]uint64
}

// askKey is a would-serve asker and the number it asked about.
type askKey struct {
	p peer.ID
	n uint64
}

// asker is a would-serve asker's fetches for one number: whether it is a
// server of the certificate before that number, else its address range,
// the fetches it took and whether one runs.
type asker struct {
	member   bool
	rng      string
	tries    int
	fetching bool
}

// MaxAskers bounds the askers of a number whose would-serve window this
// server fetches: every server of a full certificate and the roster's
// others' share (Asked); the asking slots hold as many.
const MaxAskers = wire.MaxServers + MaxRosterServing

// WouldServeFetches is an asker's budget of would-serve window fetches
// for one number: a fetch that failed, or a later attempt that pins
// another window, has one more (each reply capped at maxLookbackWindow).
const WouldServeFetches = 2

// EnterClient takes a client window slot for from, of address range rng.
func (ws *Window) EnterClient(ctx context.Context, from peer.ID, rng string) error {
	return ws.Clients.Enter(ctx, from, rng, MaxWindowServing, MaxWindowPerRange)
}

// Asked reports whether this server may fetch the window of a
// would-serve question of number n (the next here) from the asker from,
// a member of n−1's certificate or else of address range rng, and counts
// it, with done, to call once the fetch ended: done(false) if it could
// not run, which gives it back. Each asker has WouldServeFetches for n,
// one at a time: a fetch that failed is not the question's answer, and
// the asker asks again for the next attempt at n
// (TestWouldServeFetchFailed). The servers of n−1's certificate (the
// group certified for n) each get theirs; any other server of the group
// (past probation on the roster) is one of MaxRosterServing askers for
// n, MaxRosterPerRange of an address range (TestWouldServeFlood): roster
// identities are cheap, and they filled the table before a member's
// question came. Entries of earlier numbers are forgotten once their
// fetch ended; the table holds at most 2·MaxAskers.
func (ws *Window) Asked(from peer.ID, n uint64, member bool, rng string) (done func(ran bool), ok bool) {
	if member {
		rng = ""
	}
	g := ws
	g.askedMu.Lock()
	defer g.askedMu.Unlock()
	for k, a := range g.asked {
		if k.n < n && !a.fetching {
			delete(g.asked, k)
		}
	}
	k := askKey{from, n}
	a := g.asked[k]
	switch {
	case a != nil:
		if a.fetching || a.tries >= WouldServeFetches {
			return nil, false
		}
	case len(g.asked) >= 2*MaxAskers:
		return nil, false
	default:
		if !member {
			others, inRange := 0, 0
			for k, a := range g.asked {
				if k.n == n && !a.member {
					others++
					if a.rng == rng {
						inRange++
					}
				}
			}
			if others >= MaxRosterServing || inRange >= MaxRosterPerRange {
				return nil, false
			}
		}
		if g.asked == nil {
			g.asked = map[askKey]*asker{}
		}
		a = &asker{member: member, rng: rng}
		g.asked[k] = a
	}
	a.tries++
	a.fetching = true
	return func(ran bool) {
		g.askedMu.Lock()
		defer g.askedMu.Unlock()
		a.fetching = false
		if !ran {
			a.tries--
		}
	}, true
}

// AskedLen is how many askers' entries the table holds.
func (ws *Window) AskedLen() int {
	ws.askedMu.Lock()
	defer ws.askedMu.Unlock()
	return len(ws.asked)
}

// SaidYes reports whether this server answered yes to the would-serve
// question key of number n after a fetch.
func (ws *Window) SaidYes(key [32]byte, n uint64) bool {
	g := ws
	g.askedMu.Lock()
	defer g.askedMu.Unlock()
	m, ok := g.said[key]
	return ok && m == n
}

// RememberYes keeps a yes to the would-serve question key of number n,
// given after a fetch: at most one a fetch counted for n (Asked),
// entries of earlier numbers forgotten.
func (ws *Window) RememberYes(key [32]byte, n uint64) {
	g := ws
	g.askedMu.Lock()
	defer g.askedMu.Unlock()
	for k, m := range g.said {
		if m < n {
			delete(g.said, k)
		}
	}
	if len(g.said) >= MaxAskers {
		return
	}
	if g.said == nil {
		g.said = map[[32]byte]uint64{}
	}
	g.said[key] = n
}
