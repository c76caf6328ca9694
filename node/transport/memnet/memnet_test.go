package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/transport"
)

const protoSink = "/riffle-test/sink/1"

// connected starts a listening host that reads every stream to its end and
// answers one byte, and a client connected to it.
func connected(t *testing.T, n *Net) (srv, cl transport.Host) {
	t.Helper()
	srv, err := n.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetStreamHandler(protoSink, func(s transport.Stream) {
		if _, err := io.Copy(io.Discard, s); err != nil {
			s.Reset()
			return
		}
		s.Write([]byte{1})
		s.Close()
	})
	cl, err = n.NewHost(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Connect(context.Background(), peer.AddrInfo{ID: srv.ID(), Addrs: srv.Addrs()}); err != nil {
		t.Fatal(err)
	}
	return srv, cl
}

func send(ctx context.Context, cl transport.Host, to peer.ID, size int) error {
	s, err := cl.NewStream(ctx, to, protoSink)
	if err != nil {
		return err
	}
	if _, err := s.Write(make([]byte, size)); err != nil {
		return err
	}
	s.CloseWrite()
	_, err = io.ReadAll(s)
	return err
}

// TestBandwidthAndLatency: 10 MB over a 10 MB/s link with 50 ms each way
// take one second plus a round trip, in virtual time.
func TestBandwidthAndLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Link{Latency: 50 * time.Millisecond, Bandwidth: 10e6}, 1)
		srv, cl := connected(t, n)
		start := time.Now()
		if err := send(context.Background(), cl, srv.ID(), 10e6); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 1100*time.Millisecond || d > 1200*time.Millisecond {
			t.Fatalf("10 MB took %v, want 1.1 s", d)
		}
	})
}

// TestPartition: a partition drops the connection at once and a dial
// across it hangs until its context ends or DialTimeout; Heal lets it
// through again.
func TestPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Link{Latency: time.Millisecond}, 1)
		srv, cl := connected(t, n)
		down := make(chan peer.ID, 1)
		srv.OnDisconnect(func(p peer.ID) { down <- p })
		n.Partition([]peer.ID{srv.ID()}, []peer.ID{cl.ID()})
		if p := <-down; p != cl.ID() || srv.Connected(cl.ID()) {
			t.Fatalf("disconnect of %s, connected %v", p, srv.Connected(cl.ID()))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		err := send(ctx, cl, srv.ID(), 10)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("dial across a partition: %v after %v", err, time.Since(start))
		}
		start = time.Now()
		if err := send(context.Background(), cl, srv.ID(), 10); !errors.Is(err, ErrDialTimeout) || time.Since(start) != DialTimeout {
			t.Fatalf("dial across a partition, no deadline: %v after %v", err, time.Since(start))
		}
		n.Heal()
		if err := send(context.Background(), cl, srv.ID(), 10); err != nil {
			t.Fatalf("after heal: %v", err)
		}
	})
}

// TestCrash: a crash resets the streams in flight, frees the address and
// a host can come back on it.
func TestCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Link{Latency: time.Millisecond}, 1)
		srv, cl := connected(t, n)
		s, err := cl.NewStream(context.Background(), srv.ID(), protoSink)
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte("half a request"))
		n.Crash(srv.ID())
		if _, err := io.ReadAll(s); !errors.Is(err, ErrReset) {
			t.Fatalf("read after the peer crashed: %v", err)
		}
		again, err := n.NewHost(nil, []string{srv.Addrs()[0].String()})
		if err != nil {
			t.Fatalf("restart on the same address: %v", err)
		}
		if _, err := n.NewHost(nil, []string{again.Addrs()[0].String()}); err == nil {
			t.Fatal("two hosts on one address")
		}
	})
}

// TestLoss: with loss 1/2, about half the streams are reset, the draw
// fixed by the seed.
func TestLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Link{Latency: 10 * time.Millisecond, Loss: 0.5}, 7)
		srv, cl := connected(t, n)
		failed := 0
		for range 200 {
			if send(context.Background(), cl, srv.ID(), 1000) != nil {
				failed++
			}
		}
		if failed < 70 || failed > 130 {
			t.Fatalf("%d of 200 streams lost at loss 0.5", failed)
		}
	})
}

// TestWindow: a writer whose reader does not read blocks once Window
// bytes are in flight, and its deadline ends the write.
func TestWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Link{}, 1)
		srv, err := n.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
		if err != nil {
			t.Fatal(err)
		}
		hold := make(chan struct{})
		srv.SetStreamHandler(protoSink, func(s transport.Stream) { <-hold; s.Reset() })
		cl, _ := n.NewHost(nil, nil)
		cl.AddAddrs(srv.ID(), srv.Addrs(), 0)
		s, err := cl.NewStream(context.Background(), srv.ID(), protoSink)
		if err != nil {
			t.Fatal(err)
		}
		s.SetDeadline(time.Now().Add(time.Second))
		w, err := s.Write(make([]byte, 2*Window))
		if !errors.Is(err, ErrDeadline) || w != Window {
			t.Fatalf("wrote %d of %d: %v", w, 2*Window, err)
		}
		close(hold)
	})
}

// TestLinkWindowAndSource: a host made with NewHostFrom is seen at its
// address (IPv4 or IPv6) by the hosts it dials, and a link's own Window blocks a writer
// whose reader does not read after that many bytes, until its deadline.
func TestLinkWindowAndSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Link{}, 1)
		srv, err := n.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
		if err != nil {
			t.Fatal(err)
		}
		wrote := make(chan error, 1)
		srv.SetStreamHandler(protoSink, func(s transport.Stream) {
			s.SetDeadline(time.Now().Add(time.Second))
			_, err := s.Write(make([]byte, 100))
			wrote <- err
			s.Reset()
		})
		cl, err := n.NewHostFrom(nil, nil, net.IPv4(10, 1, 2, 3))
		if err != nil {
			t.Fatal(err)
		}
		n.SetLink(srv.ID(), cl.ID(), Link{Window: 16})
		cl.AddAddrs(srv.ID(), srv.Addrs(), 0)
		start := time.Now()
		s, err := cl.NewStream(context.Background(), srv.ID(), protoSink)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Reset()
		if got := srv.RemoteAddrs(cl.ID()); len(got) != 1 || !strings.HasPrefix(got[0].String(), "/ip4/10.1.2.3/tcp/") {
			t.Errorf("the server sees the client at %v, want 10.1.2.3", got)
		}
		if err := <-wrote; !errors.Is(err, ErrDeadline) || time.Since(start) != time.Second {
			t.Fatalf("a write of 100 bytes over a window of 16 to a peer that does not read: %v after %v, want %v after 1s", err, time.Since(start), ErrDeadline)
		}
		cl6, err := n.NewHostFrom(nil, nil, net.ParseIP("2001:db8:7::1"))
		if err != nil {
			t.Fatal(err)
		}
		cl6.AddAddrs(srv.ID(), srv.Addrs(), 0)
		if s6, err := cl6.NewStream(context.Background(), srv.ID(), protoSink); err != nil {
			t.Fatal(err)
		} else {
			defer s6.Reset()
		}
		if got := srv.RemoteAddrs(cl6.ID()); len(got) != 1 || !strings.HasPrefix(got[0].String(), "/ip6/2001:db8:7::1/tcp/") {
			t.Errorf("the server sees the IPv6 client at %v, want 2001:db8:7::1", got)
		}
	})
}
