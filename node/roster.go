package node

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/roster"
	"github.com/riffle-net/riffle/node/transport"
)

// The roster's rules (internal/roster) by the names node's files use.
const (
	helloEvery   = roster.HelloEvery
	rosterTTL    = roster.TTL
	roleServer   = roster.RoleServer
	rosterForget = roster.Forget
	maxRoster    = roster.Max
)

func sortChain(ids []peer.ID) { roster.SortChain(ids) }

// rosterTable is the roster (internal/roster, its own lock) by the names
// node's files call it.
type rosterTable struct{ roster.Table }

func (r *rosterTable) get(id peer.ID) *roster.Member { return r.Get(id) }
func (r *rosterTable) live() []*roster.Member        { return r.Live() }
func (r *rosterTable) saw(id peer.ID, nick string, addrs []ma.Multiaddr) bool {
	return r.Saw(id, nick, addrs)
}

// chain returns the live servers and this one in chain order, the
// excluded left out and those out for their refusal budget while enough
// remain (internal/roster's Chain).
func (s *Server) chain() []peer.ID {
	return s.chainAt(s.cert.Next())
}

// chainAt is chain for number n: those out for their budget at n left out.
func (s *Server) chainAt(n uint64) []peer.ID {
	out := func(p peer.ID) bool { return s.refusalOutAt(p, n) }
	return roster.Chain(s.h.ID(), s.roster.live(), s.rb.serverExcluded, out, s.cfg.MinServers)
}

func (s *Server) hello() *wire.Hello {
	return roster.Hello(ProtocolVersion, s.cfg.Nick, s.h.Addrs(), s.roster.live())
}

// learn records the servers a hello gossips as candidates for a hello.
func (s *Server) learn(h *wire.Hello) {
	for _, ai := range roster.Gossiped(h, s.h.ID()) {
		if s.roster.get(ai.ID) == nil && s.roster.Candidate(ai.ID) {
			s.h.AddAddrs(ai.ID, ai.Addrs, rosterTTL*2)
		}
	}
}

// handleHello answers a roster hello and records a server peer.
func (s *Server) handleHello(_ context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if err := transport.Takes(ProtoRoster, t); err != nil {
		return 0, nil, err
	}
	h, addrs, err := roster.ParseHello(body, ProtocolVersion)
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
	return s.sendHello(ctx, p, s.hello().Marshal())
}

// sendHello exchanges hellos with p, sending body (a hello of s).
func (s *Server) sendHello(ctx context.Context, p peer.ID, body []byte) error {
	rep, err := transport.Call(ctx, s.h, p, transport.Request{Proto: ProtoRoster, Type: wire.TypeHello, Body: body, Timeout: transport.ShortTimeout / 2})
	if err != nil {
		return err
	}
	h, addrs, err := roster.ParseHello(rep, ProtocolVersion)
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
		for _, id := range s.roster.Forget() {
			s.h.Unprotect(id, serverConnTag)
			s.log.Debug("server forgotten", "peer", id.ShortString())
		}
		s.who.Prune()
		s.roster.Targets(targets)
		// One hello for every target: they all leave now, and a roster
		// that peers flooded with ids that never answer made a hello
		// each (and its log line) most of a swarm seed's CPU.
		body := s.hello().Marshal()
		debug := s.log.Enabled(ctx, slog.LevelDebug)
		var wg sync.WaitGroup
		for id := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.sendHello(ctx, id, body); err != nil && debug {
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
