package node

// Internals for the end-to-end tests of package node_test, which start
// their networks with node/nodetest (that package imports node, so
// only an external test package can use it).

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// TestParams are the fast epoch parameters of the tests.
var TestParams = testParams

// Chain is the chain of live servers as s sees it.
func (s *Server) Chain() []peer.ID { return s.chain() }

// internal/members's Chains (Server.members) by the names the tests use.
func (s *Server) chain() []peer.ID                       { return s.members.Chain() }
func (s *Server) derivedChain(prev *wire.Cert) []peer.ID { return s.members.Derived(prev) }
func (s *Server) takenChain(n uint64) []peer.ID          { return s.members.Taken(n) }
func (s *Server) eligible(p peer.ID) error               { return s.members.Eligible(p) }
func (s *Server) certPeer(p peer.ID) bool                { return s.members.CertPeer(p) }

// eligibleChain is this server and the live roster servers eligible here
// (not named by a round blame, allowed, past probation), in chain order.
func (s *Server) eligibleChain() []peer.ID {
	return s.who.Filter(s.h.ID(), s.chain(), s.cert.Next(), true)
}

// Banned returns the client peers s refuses.
func (s *Server) Banned() []peer.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []peer.ID
	for p := range s.strikes.Banned {
		out = append(out, p)
	}
	return out
}

// EndedWith reports whether s holds an epoch that ended for reason.
func (s *Server) EndedWith(reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if e.ended && e.reason == reason {
			return true
		}
	}
	return false
}

// EpochsHeld returns how many epochs s keeps and how many prepared ones.
func (s *Server) EpochsHeld() (kept, prepared int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.epochs), len(s.prep)
}

// PoolBytes returns the bytes of free recycled buffers s holds.
func (s *Server) PoolBytes() int {
	return s.pool.Free()
}

// Crash stops s abruptly, as a kill would: its host goes first, so that no
// goodbye, abort or reply leaves it, then its goroutines and store.
func (s *Server) Crash() {
	s.h.Close()
	s.Close()
}

// InPhase reports whether s is in a phase of an epoch: "registration" (an
// epoch open for registration), "setup" (final descriptor in, setup not
// done here) or "round" (an epoch whose setup is done and whose first
// request list is final).
func (s *Server) InPhase(phase string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch phase {
	case "registration":
		return s.open != nil && !s.open.reg.Closed()
	case "setup":
		for _, e := range s.epochs {
			if !e.ended && e.final != nil && !e.setupDone {
				return true
			}
		}
	case "round":
		for _, e := range s.epochs {
			if !e.ended && e.setupDone && e.listHigh >= 1 {
				return true
			}
		}
	}
	return false
}

// ForgetChunks drops every chunk of s's in-memory store (a server whose
// store lacks what the others hold); false if s has another store.
func (s *Server) ForgetChunks() bool {
	m, ok := s.store.(*chunks.MemStore)
	if !ok {
		return false
	}
	m.ForgetChunks()
	return true
}

// HoldsChunk reports whether s stores chunk id.
func (s *Server) HoldsChunk(id [32]byte) bool {
	ok, err := s.store.HasChunk(id)
	return err == nil && ok
}

// KeyExcludedNext reports whether this server refuses a long-term key at
// the epoch after its last (ltexclude.go).
func (s *Server) KeyExcludedNext(key [32]byte) bool {
	s.mu.Lock()
	n := s.number
	s.mu.Unlock()
	_, ok := s.keys.Excluded(key, n)
	return ok
}

// virtual runs f in a synctest bubble on a fresh in-memory network (one
// millisecond each way, as nodetest.Virtual's): the network runs in
// virtual time. Every server and client that f starts takes the network
// from its config (testNet(t) gives it); none uses a package variable, so
// tests in bubbles of their own run side by side (t.Parallel before
// virtual: f's t must not call Run or Parallel).
func virtual(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		bubbleNets.Store(t, memnet.New(virtualLink(t), 1))
		defer bubbleNets.Delete(t)
		f(t)
	})
}

// Virtual is virtual for the package's external tests.
func Virtual(t *testing.T, f func(t *testing.T)) { virtual(t, f) }

// bubbleNets holds the network of each test in virtual's bubble, by the
// bubble's t.
var bubbleNets sync.Map // testing.TB → *memnet.Net

// testNet is the network of t's bubble (virtual), for a server's or a
// client's Config.Network; nil (libp2p) outside one.
func testNet(t testing.TB) transport.Network {
	if n := testMemnet(t); n != nil {
		return n
	}
	return nil
}

// testMemnet is the in-memory network of t's bubble, nil outside one.
func testMemnet(t testing.TB) *memnet.Net {
	n, ok := bubbleNets.Load(t)
	if !ok {
		return nil
	}
	return n.(*memnet.Net)
}

// VirtualNet is testNet for the package's external tests.
func VirtualNet(t testing.TB) transport.Network { return testNet(t) }

// The network of a config that names none is libp2p, on real sockets,
// which a bubble cannot wait on: in the tests, a server or client that a
// test starts in a bubble without a network fails at once, saying so.
func init() { transport.DefaultNetwork = bubbleGuard{transport.DefaultNetwork} }

type bubbleGuard struct{ transport.Network }

func (g bubbleGuard) NewHost(priv crypto.PrivKey, listen []string) (transport.Host, error) {
	// A bubble's clock starts at midnight UTC, 1 January 2000 (package
	// testing/synctest), decades before any real clock.
	if time.Now().Year() < 2010 {
		return nil, errors.New("node test: a host in a synctest bubble needs the test's network (Config.Network = testNet(t))")
	}
	return g.Network.NewHost(priv, listen)
}

// virtualLink is the link of virtual's networks: a millisecond each way,
// or RIFFLE_VIRTUAL_LINK=latency[,bytes/s] (the suite under slow links).
func virtualLink(t *testing.T) memnet.Link {
	l := memnet.Link{Latency: time.Millisecond}
	v := os.Getenv("RIFFLE_VIRTUAL_LINK")
	if v == "" {
		return l
	}
	lat, bw, _ := strings.Cut(v, ",")
	d, err := time.ParseDuration(lat)
	if err != nil {
		t.Fatalf("RIFFLE_VIRTUAL_LINK=%q: %v", v, err)
	}
	l.Latency = d
	if bw != "" {
		if l.Bandwidth, err = strconv.ParseInt(bw, 10, 64); err != nil {
			t.Fatalf("RIFFLE_VIRTUAL_LINK=%q: %v", v, err)
		}
	}
	return l
}

// long skips t in -short mode, the race pass of make test: the tests it
// marks are long under the race detector (statistics, many epochs, real
// sockets and real time) and the full pass runs them.
func long(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long: the full pass runs it, -short (the race pass) leaves it out")
	}
}

// Long is long for the package's external tests.
func Long(t *testing.T) { t.Helper(); long(t) }
