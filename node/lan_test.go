package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wait"
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

// testNotifee is s's LAN notifee with its hellos counted; next is the
// real hello when nil. It is closed before s (cleanups run last first).
func testNotifee(t *testing.T, s *Server, next func(context.Context, peer.ID) error) (*lanNotifee, *helloCounter) {
	n := s.newLANNotifee(s.ctx)
	if next == nil {
		next = n.hello
	}
	c := &helloCounter{next: next}
	n.hello = c.hello
	t.Cleanup(func() { n.close() })
	return n, c
}

func randomPeer(t *testing.T) peer.ID {
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// deadPort returns a 127.0.0.1 TCP port with nothing listening.
func deadPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestMdnsServiceName: the service type is a DNS-SD one (RFC 6763 §7,
// RFC 6335 §5.1), with none of the characters zeroconf reads as structure.
func TestMdnsServiceName(t *testing.T) {
	re := regexp.MustCompile(`^_([a-z0-9]+(-[a-z0-9]+)*)\._(udp|tcp)$`)
	m := re.FindStringSubmatch(mdnsService)
	if m == nil || len(m[1]) > 15 || !strings.ContainsAny(m[1], "abcdefghijklmnopqrstuvwxyz") {
		t.Fatalf("service type %q is not _<name>._<proto> with a 1–15 character name", mdnsService)
	}
}

// TestLANIgnoresSelf: an answer naming this server starts nothing.
func TestLANIgnoresSelf(t *testing.T) {
	s := beaconServer(t)
	n, c := testNotifee(t, s, nil)
	n.HandlePeerFound(peer.AddrInfo{ID: s.ID(), Addrs: s.h.Addrs()})
	n.wg.Wait()
	if started, _, _ := c.counts(); started != 0 || len(n.tried) != 0 || s.roster.get(s.ID()) != nil {
		t.Fatalf("own answer: %d hellos, %d tracked", started, len(n.tried))
	}
}

// TestLANFindAdmits: a found server joins the roster through the hello, and
// a find of a roster member starts nothing more.
func TestLANFindAdmits(t *testing.T) {
	s1, s2 := beaconServer(t), beaconServer(t)
	n, c := testNotifee(t, s1, nil)
	ai := peer.AddrInfo{ID: s2.ID(), Addrs: s2.h.Addrs()}
	n.HandlePeerFound(ai)
	if err := wait.Until(context.Background(), 10*time.Second, func() bool { return s1.roster.get(s2.ID()) != nil }); err != nil {
		started, _, errs := c.counts()
		t.Fatalf("found server not in the roster after 10 s (%d hellos, %d failed)", started, errs)
	}
	n.wg.Wait()
	n.HandlePeerFound(ai)
	n.wg.Wait()
	n.mu.Lock()
	_, tracked := n.tried[s2.ID()]
	n.mu.Unlock()
	if started, _, errs := c.counts(); started != 1 || errs != 0 || tracked {
		t.Fatalf("%d hellos (%d failed), still tracked %v; want one good hello, untracked", started, errs, tracked)
	}
}

// TestLANAddrCap: of an answer with a thousand addresses, only lanMaxAddrs
// IP ones reach the peerstore; names and relay addresses are dropped.
func TestLANAddrCap(t *testing.T) {
	s := beaconServer(t)
	// No dial at all: only what reaches the peerstore matters here.
	n, c := testNotifee(t, s, func(context.Context, peer.ID) error { return nil })
	id := randomPeer(t)
	var addrs []ma.Multiaddr
	for _, a := range []string{"/dns4/riffle.example/tcp/4433", "/dnsaddr/riffle.example", "/ip4/127.0.0.1/tcp/1/p2p-circuit"} {
		addrs = append(addrs, ma.StringCast(a))
	}
	for i := len(addrs); i < 1000; i++ {
		addrs = append(addrs, ma.StringCast(fmt.Sprintf("/ip4/127.0.%d.%d/tcp/4433", i/256, i%256)))
	}
	n.HandlePeerFound(peer.AddrInfo{ID: id, Addrs: addrs})
	n.wg.Wait()
	got := lp(s.h).Peerstore().Addrs(id)
	if len(got) != lanMaxAddrs {
		t.Fatalf("%d addresses in the peerstore, want %d", len(got), lanMaxAddrs)
	}
	for _, a := range got {
		if !strings.HasPrefix(a.String(), "/ip4/127.0.") || strings.Contains(a.String(), "circuit") {
			t.Fatalf("address %s taken", a)
		}
	}
	if started, _, _ := c.counts(); started != 1 {
		t.Fatalf("%d hellos, want 1", started)
	}
}

// TestLANBackoff: an unreachable peer found again and again is tried once
// per Tunables.LANRetry, however many answers name it.
func TestLANBackoff(t *testing.T) {
	s := beaconServer(t)
	n, c := testNotifee(t, s, nil)
	ai := peer.AddrInfo{ID: randomPeer(t), Addrs: []ma.Multiaddr{ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", deadPort(t)))}}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { n.HandlePeerFound(ai) })
	}
	wg.Wait()
	n.wg.Wait()
	for range 20 {
		n.HandlePeerFound(ai)
	}
	n.wg.Wait()
	if started, _, errs := c.counts(); started != 1 || errs != 1 {
		t.Fatalf("%d hellos (%d failed) to an unreachable peer found 40 times, want 1 failed", started, errs)
	}
}

// TestLANFloodBounded: answers naming ever new peers get at most
// lanMaxHellos hellos in flight and lanHellosPerMinute a minute, and the
// retry map stays bounded.
func TestLANFloodBounded(t *testing.T) {
	s := beaconServer(t)
	release := make(chan struct{})
	n, c := testNotifee(t, s, func(ctx context.Context, _ peer.ID) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	addrs := []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/9")}
	for range 3 * lanMaxHellos {
		n.HandlePeerFound(peer.AddrInfo{ID: randomPeer(t), Addrs: addrs})
	}
	if started, _, _ := c.counts(); started > lanMaxHellos {
		t.Fatalf("%d hellos started while all hang, want ≤ %d", started, lanMaxHellos)
	}
	close(release)
	n.wg.Wait()
	for range 2 * lanHellosPerMinute {
		n.HandlePeerFound(peer.AddrInfo{ID: randomPeer(t), Addrs: addrs})
		n.wg.Wait()
	}
	started, maxIn, _ := c.counts()
	if started != lanHellosPerMinute || maxIn > lanMaxHellos {
		t.Fatalf("%d hellos (%d at once) within a minute, want %d (≤ %d at once)", started, maxIn, lanHellosPerMinute, lanMaxHellos)
	}
	n.mu.Lock()
	now := time.Now()
	for i := range lanMaxTracked + 10 {
		n.track(peer.ID(fmt.Sprint(i)), now)
	}
	tracked := len(n.tried)
	n.mu.Unlock()
	if tracked != lanMaxTracked {
		t.Fatalf("%d peers tracked, want %d", tracked, lanMaxTracked)
	}
}
