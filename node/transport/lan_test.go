package transport

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// lanHost is a libp2p host on 127.0.0.1 that no server runs on: LAN tests
// feed its notifee by hand and never send multicast.
func lanHost(t testing.TB) Host {
	h, err := Libp2p{}.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
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

// testNotifee is h's LAN notifee, with the Tunables' default retry and
// hello timeout, its hellos counted; next, when nil, dials the peer as a
// hello would. It is closed before h (cleanups run last first).
func testNotifee(t *testing.T, h Host, next func(context.Context, peer.ID) error) (*LAN, *helloCounter) {
	if next == nil {
		next = func(ctx context.Context, p peer.ID) error { return h.Connect(ctx, peer.AddrInfo{ID: p}) }
	}
	c := &helloCounter{next: next}
	ctx, cancel := context.WithCancel(context.Background())
	n := NewLAN(ctx, h, LANConfig{
		Known: func(peer.ID) bool { return false },
		Hello: c.hello, Retry: 30 * time.Second, HelloTimeout: 5 * time.Second, AddrTTL: time.Minute,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	t.Cleanup(func() { n.Close(); cancel() })
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

// TestLANAddrCap: of an answer with a thousand addresses, only lanMaxAddrs
// IP ones reach the peerstore; names and relay addresses are dropped.
func TestLANAddrCap(t *testing.T) {
	h := lanHost(t)
	// No dial at all: only what reaches the peerstore matters here.
	n, c := testNotifee(t, h, func(context.Context, peer.ID) error { return nil })
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
	l, _ := Libp2pOf(h)
	got := l.Peerstore().Addrs(id)
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
// per LANConfig.Retry, however many answers name it.
func TestLANBackoff(t *testing.T) {
	h := lanHost(t)
	n, c := testNotifee(t, h, nil)
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
	h := lanHost(t)
	release := make(chan struct{})
	n, c := testNotifee(t, h, func(ctx context.Context, _ peer.ID) error {
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
