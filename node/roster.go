package node

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// Roster timing: a server is live while its last hello is younger than
// rosterTTL; hellos are repeated every helloEvery. Other servers judge a
// server live by its hellos, so both are protocol rules, not Tunables.
const (
	helloEvery = 3 * time.Second
	rosterTTL  = 12 * time.Second
	roleServer = 1
	// rosterForget is how long a member may stay silent before it is
	// forgotten: no more hellos go to it (bootstrap peers excepted), and
	// it is back only by a hello of its own or by gossip.
	rosterForget = 10 * time.Minute
	// maxRoster bounds the members (any peer may say hello as a server).
	// A member is evicted for a newcomer only once it is not live, the
	// stalest first; while every member is live, newcomers wait.
	maxRoster = 1024
)

type member struct {
	id    peer.ID
	nick  string
	addrs []ma.Multiaddr
	seen  time.Time // its last hello
	gone  bool      // taken for gone (serverdown.go) until its next hello
}

// roster is the set of live server peers (§3).
type roster struct {
	mu sync.Mutex
	m  map[peer.ID]*member
	// candidates are servers that others gossiped and that have not yet
	// answered a hello; they join m only by answering (authenticated).
	candidates map[peer.ID]bool
	// clock, if set, replaces time.Now (tests).
	clock func() time.Time
}

// maxCandidates bounds the gossiped servers waiting for a first hello.
const maxCandidates = 256

func (r *roster) now() time.Time {
	if r.clock != nil {
		return r.clock()
	}
	return time.Now()
}

// isLive reports whether m is live at now. Call with r.mu held.
func (m *member) isLive(now time.Time) bool { return !m.gone && now.Sub(m.seen) < rosterTTL }

// saw records a hello of id; it reports whether id is a member now (false:
// the roster is full of live members).
func (r *roster) saw(id peer.ID, nick string, addrs []ma.Multiaddr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[peer.ID]*member)
	}
	now := r.now()
	if r.m[id] == nil && len(r.m) >= maxRoster {
		var stale *member
		for _, m := range r.m {
			if !m.isLive(now) && (stale == nil || m.seen.Before(stale.seen)) {
				stale = m
			}
		}
		if stale == nil {
			return false
		}
		delete(r.m, stale.id)
	}
	r.m[id] = &member{id: id, nick: nick, addrs: addrs, seen: now}
	return true
}

// forget drops the members silent for rosterForget and returns them.
func (r *roster) forget() []peer.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var out []peer.ID
	for id, m := range r.m {
		if now.Sub(m.seen) >= rosterForget {
			delete(r.m, id)
			out = append(out, id)
		}
	}
	return out
}

// live returns the live members.
func (r *roster) live() []*member {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var out []*member
	for _, m := range r.m {
		if m.isLive(now) {
			out = append(out, m)
		}
	}
	return out
}

func (r *roster) get(id peer.ID) *member {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.m[id]; m != nil && m.isLive(r.now()) {
		return m
	}
	return nil
}

// sortChain orders peer ids by their raw bytes: the chain order of §3.
func sortChain(ids []peer.ID) {
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare([]byte(ids[i]), []byte(ids[j])) < 0 })
}

// chain returns the live servers and this one in chain order.
func (s *Server) chain() []peer.ID {
	all := []peer.ID{s.h.ID()}
	for _, m := range s.roster.live() {
		if m.id != s.h.ID() && !s.rb.serverExcluded(m.id) {
			all = append(all, m.id)
		}
	}
	// A server out for its refusal budget stays out only while a chain
	// forms without it (refusals.go); this one too, as at every other
	// server: kept in its own chain, two servers out at once each left
	// the other out and the rest kept both (TestTwoOutForBudget).
	var ids, out []peer.ID
	for _, p := range all {
		if s.refusalOut(p) {
			out = append(out, p)
		} else {
			ids = append(ids, p)
		}
	}
	if len(ids) < s.cfg.MinServers {
		ids = append(ids, out...)
	}
	sortChain(ids)
	return ids
}

func (s *Server) hello() *wire.Hello {
	h := &wire.Hello{Version: ProtocolVersion, Role: roleServer, Nick: []byte(s.cfg.Nick)}
	for _, a := range s.h.Addrs() {
		if len(h.Addrs) < wire.MaxAddrs {
			h.Addrs = append(h.Addrs, a.Bytes())
		}
	}
	for _, m := range s.roster.live() {
		if len(h.Peers) == wire.MaxGossip || len(m.addrs) == 0 {
			continue
		}
		p2p, err := ma.NewComponent("p2p", m.id.String())
		if err != nil {
			continue
		}
		if b := m.addrs[0].Encapsulate(p2p.Multiaddr()).Bytes(); len(b) <= wire.MaxAddr {
			h.Peers = append(h.Peers, b)
		}
	}
	return h
}

// learn records the servers a hello gossips as candidates for a hello.
func (s *Server) learn(h *wire.Hello) {
	for _, b := range h.Peers {
		a, err := ma.NewMultiaddrBytes(b)
		if err != nil {
			continue
		}
		ai, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil || ai.ID == s.h.ID() || s.roster.get(ai.ID) != nil {
			continue
		}
		s.roster.mu.Lock()
		if s.roster.candidates == nil {
			s.roster.candidates = map[peer.ID]bool{}
		}
		if len(s.roster.candidates) < maxCandidates && s.roster.m[ai.ID] == nil {
			s.roster.candidates[ai.ID] = true
			s.h.AddAddrs(ai.ID, ai.Addrs, rosterTTL*2)
		}
		s.roster.mu.Unlock()
	}
}

func parseHello(b []byte) (*wire.Hello, []ma.Multiaddr, error) {
	var h wire.Hello
	if err := h.Unmarshal(b); err != nil {
		return nil, nil, err
	}
	if h.Version != ProtocolVersion {
		return nil, nil, fmt.Errorf("node: peer speaks protocol %d, want %d", h.Version, ProtocolVersion)
	}
	var addrs []ma.Multiaddr
	for _, a := range h.Addrs {
		if m, err := ma.NewMultiaddrBytes(a); err == nil {
			addrs = append(addrs, m)
		}
	}
	return &h, addrs, nil
}

// handleHello answers a roster hello and records a server peer.
func (s *Server) handleHello(_ context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if err := takes(ProtoRoster, t); err != nil {
		return 0, nil, err
	}
	h, addrs, err := parseHello(body)
	if err != nil {
		return 0, nil, err
	}
	if h.Role == roleServer {
		s.sawServer(from, string(h.Nick), addrs)
		s.h.AddAddrs(from, addrs, rosterTTL*2)
		s.learn(h)
	}
	return wire.TypeHello, s.hello().Marshal(), nil
}

// lanConfig is what LAN discovery (transport.LAN) takes from s: an answer
// is only an address hint, admitted to the roster by s's hello alone.
func lanConfig(s *Server) transport.LANConfig {
	return transport.LANConfig{
		Known:        func(id peer.ID) bool { return s.roster.get(id) != nil },
		Hello:        s.sayHello,
		Retry:        s.cfg.Timing.LANRetry,
		HelloTimeout: s.cfg.Timing.LANHelloTimeout,
		AddrTTL:      rosterTTL * 2,
		Log:          s.log,
	}
}

// sayHello exchanges hellos with p.
func (s *Server) sayHello(ctx context.Context, p peer.ID) error {
	rep, err := call(ctx, s.h, p, request{Proto: ProtoRoster, Type: wire.TypeHello, Body: s.hello().Marshal(), Timeout: shortTimeout / 2})
	if err != nil {
		return err
	}
	h, addrs, err := parseHello(rep)
	if err != nil {
		return err
	}
	if h.Role == roleServer {
		s.sawServer(p, string(h.Nick), addrs)
		s.learn(h)
	}
	return nil
}

// rosterLoop keeps hellos going to the bootstrap peers and every known
// server, so that the roster tracks who is live.
func (s *Server) rosterLoop(ctx context.Context, boot []peer.AddrInfo) {
	t := time.NewTicker(helloEvery)
	defer t.Stop()
	for {
		targets := map[peer.ID]bool{}
		for _, b := range boot {
			if b.ID != s.h.ID() {
				s.h.AddAddrs(b.ID, b.Addrs, rosterTTL*2)
				targets[b.ID] = true
			}
		}
		// A server silent for rosterForget gets no more hellos.
		for _, id := range s.roster.forget() {
			s.h.Unprotect(id, serverConnTag)
			s.log.Debug("server forgotten", "peer", id.ShortString())
		}
		s.who.prune()
		s.roster.mu.Lock()
		for id := range s.roster.m {
			targets[id] = true
		}
		for id := range s.roster.candidates {
			targets[id] = true
		}
		// A candidate gets one try; if it is live it will be gossiped
		// again.
		s.roster.candidates = nil
		s.roster.mu.Unlock()
		var wg sync.WaitGroup
		for id := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.sayHello(ctx, id); err != nil {
					s.log.Debug("hello failed", "peer", id.ShortString(), "err", err)
				}
			}()
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.helloNow:
		}
	}
}
