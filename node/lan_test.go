package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/transport"
)

// beaconServer is a server on 127.0.0.1 with LAN discovery off, so that a
// test never sends multicast; LAN tests feed its notifee by hand.
func beaconServer(t testing.TB) *Server {
	s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Store: NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// helloCounter wraps a hello function and counts the attempts it starts.
type helloCounter struct {
	mu       sync.Mutex
	started  int
	inFlight int
	maxIn    int
	errs     int
	next     func(context.Context, peer.ID) error
}

func (c *helloCounter) hello(ctx context.Context, p peer.ID) error {
	c.mu.Lock()
	c.started++
	c.inFlight++
	c.maxIn = max(c.maxIn, c.inFlight)
	c.mu.Unlock()
	err := c.next(ctx, p)
	c.mu.Lock()
	c.inFlight--
	if err != nil {
		c.errs++
	}
	c.mu.Unlock()
	return err
}

func (c *helloCounter) counts() (started, maxIn, errs int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started, c.maxIn, c.errs
}

// testNotifee is s's LAN notifee with its real hellos counted (the
// notifee's own bounds are transport's lan_test.go). It is closed before s
// (cleanups run last first).
func testNotifee(t *testing.T, s *Server) (*transport.LAN, *helloCounter) {
	cfg := lanConfig(s)
	c := &helloCounter{next: cfg.Hello}
	cfg.Hello = c.hello
	n := transport.NewLAN(s.ctx, s.h, cfg)
	t.Cleanup(func() { n.Close() })
	return n, c
}

// TestLANIgnoresSelf: an answer naming this server starts nothing.
func TestLANIgnoresSelf(t *testing.T) {
	s := beaconServer(t)
	n, c := testNotifee(t, s)
	n.HandlePeerFound(peer.AddrInfo{ID: s.ID(), Addrs: s.h.Addrs()})
	n.Close() // waits for any hello started
	if started, _, _ := c.counts(); started != 0 || n.Tracked(s.ID()) || s.roster.get(s.ID()) != nil {
		t.Fatalf("own answer: %d hellos, tracked %v", started, n.Tracked(s.ID()))
	}
}

// TestLANFindAdmits: a found server joins the roster through the hello, and
// a find of a roster member starts nothing more.
func TestLANFindAdmits(t *testing.T) {
	s1, s2 := beaconServer(t), beaconServer(t)
	n, c := testNotifee(t, s1)
	ai := peer.AddrInfo{ID: s2.ID(), Addrs: s2.h.Addrs()}
	n.HandlePeerFound(ai)
	if err := wait.Until(context.Background(), 10*time.Second, func() bool { return s1.roster.get(s2.ID()) != nil }); err != nil {
		started, _, errs := c.counts()
		t.Fatalf("found server not in the roster after 10 s (%d hellos, %d failed)", started, errs)
	}
	n.HandlePeerFound(ai)
	n.Close() // waits for the hello in flight
	tracked := n.Tracked(s2.ID())
	if started, _, errs := c.counts(); started != 1 || errs != 0 || tracked {
		t.Fatalf("%d hellos (%d failed), still tracked %v; want one good hello, untracked", started, errs, tracked)
	}
}
