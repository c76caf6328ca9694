// Package roster is a server's roster of live servers (docs/protocol.md
// §3): the servers that said hello, live while their last hello is
// younger than TTL, forgotten after Forget of silence, at most Max of
// them (a newcomer evicts only a member that is not live, the stalest
// first), and the servers others gossiped, at most MaxCandidates, that
// join only by answering a hello of their own. Table has its own lock and
// does no I/O; the hello's encoding and checks, the chain a server
// orders from its roster (Chain) and its check of a chain proposed to it
// (Members) are here too, and Hellos (hellos.go), which says and
// answers the hellos over the roster protocol, its state Table's; package
// node's roster.go gives it the server's side and orders the chain.
package roster

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
)

// Roster timing: a server is live while its last hello is younger than
// TTL; hellos are repeated every HelloEvery. Other servers judge a server
// live by its hellos, so both are protocol rules, not tunables.
const (
	HelloEvery = 3 * time.Second
	TTL        = 12 * time.Second
	// RoleServer is a hello's role of a server.
	RoleServer = 1
	// Forget is how long a member may stay silent before it is
	// forgotten: no more hellos go to it (bootstrap peers excepted), and
	// it is back only by a hello of its own or by gossip.
	Forget = 10 * time.Minute
	// Max bounds the members (any peer may say hello as a server). A
	// member is evicted for a newcomer only once it is not live, the
	// stalest first; while every member is live, newcomers wait.
	Max = 1024
	// MaxCandidates bounds the gossiped servers waiting for a first
	// hello.
	MaxCandidates = 256
)

// Member is a server of the roster.
type Member struct {
	ID    peer.ID
	Nick  string
	Addrs []ma.Multiaddr
	Seen  time.Time // its last hello
	Gone  bool      // taken for gone until its next hello
}

// isLive reports whether m is live at now. Call with the table's lock
// held.
func (m *Member) isLive(now time.Time) bool { return !m.Gone && now.Sub(m.Seen) < TTL }

// Table is the set of live server peers (§3). mu is a leaf lock.
type Table struct {
	mu sync.Mutex
	m  map[peer.ID]*Member
	// candidates are servers that others gossiped and that have not yet
	// answered a hello; they join m only by answering (authenticated).
	candidates map[peer.ID]bool
	// Clock, if set, replaces time.Now (tests).
	Clock func() time.Time
}

func (r *Table) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}

// Saw records a hello of id; it reports whether id is a member now (false:
// the roster is full of live members).
func (r *Table) Saw(id peer.ID, nick string, addrs []ma.Multiaddr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[peer.ID]*Member)
	}
	now := r.now()
	if r.m[id] == nil && len(r.m) >= Max {
		var stale *Member
		for _, m := range r.m {
			if !m.isLive(now) && (stale == nil || m.Seen.Before(stale.Seen)) {
				stale = m
			}
		}
		if stale == nil {
			return false
		}
		delete(r.m, stale.ID)
	}
	r.m[id] = &Member{ID: id, Nick: nick, Addrs: addrs, Seen: now}
	return true
}

// Forget drops the members silent for Forget and returns them.
func (r *Table) Forget() []peer.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var out []peer.ID
	for id, m := range r.m {
		if now.Sub(m.Seen) >= Forget {
			delete(r.m, id)
			out = append(out, id)
		}
	}
	return out
}

// Live returns the live members.
func (r *Table) Live() []*Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var out []*Member
	for _, m := range r.m {
		if m.isLive(now) {
			out = append(out, m)
		}
	}
	return out
}

// Get returns id's member if it is live, else nil.
func (r *Table) Get(id peer.ID) *Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.m[id]; m != nil && m.isLive(r.now()) {
		return m
	}
	return nil
}

// LastSeen returns id's last hello, live or not; false if id is no
// member.
func (r *Table) LastSeen(id peer.ID) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.m[id]; m != nil {
		return m.Seen, true
	}
	return time.Time{}, false
}

// Len is the number of members, live or not.
func (r *Table) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// Expire marks id as not live, keeping it as a target of hellos (a server
// that comes back is live again at its first answer).
func (r *Table) Expire(id peer.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.m[id]; m != nil {
		m.Gone = true
	}
}

// Candidate records a gossiped server that is not a member as a
// candidate for a hello; it reports whether it was taken (false: a
// member, or MaxCandidates wait already).
func (r *Table) Candidate(id peer.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.candidates == nil {
		r.candidates = map[peer.ID]bool{}
	}
	if len(r.candidates) >= MaxCandidates || r.m[id] != nil {
		return false
	}
	r.candidates[id] = true
	return true
}

// Targets adds to targets every member and candidate, the peers the next
// round of hellos goes to. A candidate gets one try: it is dropped here,
// and if it is live it will be gossiped again.
func (r *Table) Targets(targets map[peer.ID]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.m {
		targets[id] = true
	}
	for id := range r.candidates {
		targets[id] = true
	}
	r.candidates = nil
}

// SortChain orders peer ids by their raw bytes: the chain order of §3.
func SortChain(ids []peer.ID) {
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare([]byte(ids[i]), []byte(ids[j])) < 0 })
}

// Hello is a server's hello: its nick, at most wire.MaxAddrs of its
// addresses, and at most wire.MaxGossip of the live members, each by its
// first address.
func Hello(version uint16, nick string, addrs []ma.Multiaddr, live []*Member) *wire.Hello {
	h := &wire.Hello{Version: version, Role: RoleServer, Nick: []byte(nick)}
	for _, a := range addrs {
		if len(h.Addrs) < wire.MaxAddrs {
			h.Addrs = append(h.Addrs, a.Bytes())
		}
	}
	for _, m := range live {
		if len(h.Peers) == wire.MaxGossip || len(m.Addrs) == 0 {
			continue
		}
		p2p, err := ma.NewComponent("p2p", m.ID.String())
		if err != nil {
			continue
		}
		if b := m.Addrs[0].Encapsulate(p2p.Multiaddr()).Bytes(); len(b) <= wire.MaxAddr {
			h.Peers = append(h.Peers, b)
		}
	}
	return h
}

// ParseHello decodes a hello of protocol version and its addresses that
// parse.
func ParseHello(b []byte, version uint16) (*wire.Hello, []ma.Multiaddr, error) {
	var h wire.Hello
	if err := h.Unmarshal(b); err != nil {
		return nil, nil, err
	}
	if h.Version != version {
		return nil, nil, fmt.Errorf("node: peer speaks protocol %d, want %d", h.Version, version)
	}
	var addrs []ma.Multiaddr
	for _, a := range h.Addrs {
		if m, err := ma.NewMultiaddrBytes(a); err == nil {
			addrs = append(addrs, m)
		}
	}
	return &h, addrs, nil
}

// Gossiped is the servers a hello names, other than self, with their
// addresses.
func Gossiped(h *wire.Hello, self peer.ID) []peer.AddrInfo {
	var out []peer.AddrInfo
	for _, b := range h.Peers {
		a, err := ma.NewMultiaddrBytes(b)
		if err != nil {
			continue
		}
		ai, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil || ai.ID == self {
			continue
		}
		out = append(out, *ai)
	}
	return out
}

// Chain is the chain a server orders from its roster (§3): itself and the
// live members, less those a round blame excluded (excluded), in chain
// order. A server out for its refusal budget (out) stays out only while a
// chain of at least min forms without it, the server itself too, as at
// every other server: kept in its own chain, two servers out at once each
// left the other out and the rest kept both (node's TestTwoOutForBudget).
func Chain(self peer.ID, live []*Member, excluded, out func(peer.ID) bool, min int) []peer.ID {
	all := []peer.ID{self}
	for _, m := range live {
		if m.ID != self && !excluded(m.ID) {
			all = append(all, m.ID)
		}
	}
	var ids, left []peer.ID
	for _, p := range all {
		if out(p) {
			left = append(left, p)
		} else {
			ids = append(ids, p)
		}
	}
	if len(ids) < min {
		ids = append(ids, left...)
	}
	SortChain(ids)
	return ids
}

// Members checks the servers of a chain proposed to self (a Prepare's, or
// a would-serve question's; what names it in errors) as Chain orders
// self's own: none that a round blame excluded (excluded), none out for
// its refusal budget (out) while at least min remain without those, and
// every other one passes more (nil: none). It returns self's position, -1
// if self is not in it.
func Members(chain [][]byte, self peer.ID, what string, min int, excluded, out func(peer.ID) bool, more func(peer.ID) error) (int, error) {
	nOut := 0
	for _, c := range chain {
		if out(peer.ID(c)) {
			nOut++
		}
	}
	cutOut := len(chain)-nOut >= min
	pos := -1
	for i, c := range chain {
		id := peer.ID(c)
		switch {
		case id == self:
			pos = i
			continue
		case excluded(id):
			return -1, fmt.Errorf("node: %s has %s, named by a round blame", what, id.ShortString())
		case cutOut && out(id):
			return -1, fmt.Errorf("node: %s has %s, out for its refusal budget", what, id.ShortString())
		}
		if more != nil {
			if err := more(id); err != nil {
				return -1, err
			}
		}
	}
	return pos, nil
}
