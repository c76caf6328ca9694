package node

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/node/transport"
)

// protoBulkTest is the benchmark's echo-digest protocol: the dialer sends
// a u32 length and that many bytes, the listener answers their SHA-256.
const protoBulkTest = protocol.ID("/riffle-test/bulk/1")

// bulkTestMax bounds a bulk test message (the largest payload measured).
const bulkTestMax = 4 << 20

var transportListen = map[string]string{
	"tcp":  "/ip4/127.0.0.1/tcp/0",
	"quic": "/ip4/127.0.0.1/udp/0/quic-v1",
}

// bulkPair starts a listener host on one transport only and a dialer host
// (riffle's host either way) connected to it, the listener serving
// protoBulkTest.
func bulkPair(tb testing.TB, kind string) (dialer host.Host, to peer.ID) {
	tb.Helper()
	srv, err := transport.NewLibp2pHost(nil, []string{transportListen[kind]})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	srv.SetStreamHandler(protoBulkTest, func(s network.Stream) {
		defer s.Close()
		buf := make([]byte, bulkTestMax)
		for {
			var n [4]byte
			if _, err := io.ReadFull(s, n[:]); err != nil {
				return
			}
			l := binary.BigEndian.Uint32(n[:])
			if l > bulkTestMax {
				s.Reset()
				return
			}
			if _, err := io.ReadFull(s, buf[:l]); err != nil {
				return
			}
			sum := sha256.Sum256(buf[:l])
			if _, err := s.Write(sum[:]); err != nil {
				return
			}
		}
	})
	cl, err := transport.NewLibp2pHost(nil, []string{transportListen[kind]})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Connect(ctx, peer.AddrInfo{ID: srv.ID(), Addrs: srv.Addrs()}); err != nil {
		tb.Fatal(err)
	}
	return cl, srv.ID()
}

// bulkCall sends msg on s and checks the digest that comes back.
func bulkCall(s network.Stream, msg []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(msg)))
	if _, err := s.Write(n[:]); err != nil {
		return err
	}
	if _, err := s.Write(msg); err != nil {
		return err
	}
	var got [32]byte
	if _, err := io.ReadFull(s, got[:]); err != nil {
		return err
	}
	if want := sha256.Sum256(msg); got != want {
		return fmt.Errorf("digest %x, want %x: the bytes changed on the way", got[:4], want[:4])
	}
	return nil
}

// connTransport is the transport of the connection between h and p.
func connTransport(h host.Host, p peer.ID) string {
	conns := h.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return "none"
	}
	if _, err := conns[0].RemoteMultiaddr().ValueForProtocol(ma.P_QUIC_V1); err == nil {
		return "quic"
	}
	return "tcp"
}

// TestBulkTransports: 256 KiB and 4 MiB messages arrive intact over TCP
// and over QUIC between two riffle hosts on loopback (the digest each way
// is checked), on a connection of the transport asked for.
func TestBulkTransports(t *testing.T) {
	for _, tr := range []string{"tcp", "quic"} {
		t.Run(tr, func(t *testing.T) {
			cl, to := bulkPair(t, tr)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := cl.NewStream(ctx, to, protoBulkTest)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := connTransport(cl, to); got != tr {
				t.Fatalf("connected over %s, want %s", got, tr)
			}
			for _, size := range []int{256 << 10, 4 << 20, 1} {
				msg := make([]byte, size)
				rand.Read(msg)
				if err := bulkCall(s, msg); err != nil {
					t.Fatalf("%d bytes: %v", size, err)
				}
			}
		})
	}
}

// cpuTime is this process's user plus system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBulkCall moves 256 KiB messages (a chunk, the size of riffle's
// batch entries and padded answers) between two riffle hosts on loopback,
// over TCP (TLS 1.3, yamux) and over QUIC, 8 streams at once. Both ends
// run in this process, so cpu-ns/B is the CPU of sending and receiving a
// byte, both sides together.
func BenchmarkBulkCall(b *testing.B) {
	const size, streams = 256 << 10, 8
	for _, tr := range []string{"tcp", "quic"} {
		b.Run(tr, func(b *testing.B) {
			cl, to := bulkPair(b, tr)
			ctx := context.Background()
			var ss []network.Stream
			for range streams {
				s, err := cl.NewStream(ctx, to, protoBulkTest)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				ss = append(ss, s)
			}
			msg := make([]byte, size)
			rand.Read(msg)
			// Warm the connection's windows before timing.
			for _, s := range ss {
				if err := bulkCall(s, msg); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(size * streams)
			b.ResetTimer()
			cpu0, t0 := cpuTime(b), time.Now()
			for range b.N {
				errs := make(chan error, streams)
				for _, s := range ss {
					go func() { errs <- bulkCall(s, msg) }()
				}
				for range ss {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
			}
			cpu, wall := cpuTime(b)-cpu0, time.Since(t0)
			b.StopTimer()
			moved := float64(b.N) * size * streams
			b.ReportMetric(float64(cpu.Nanoseconds())/moved, "cpu-ns/B")
			b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
		})
	}
}

// TestDialTCPFirst: a riffle host dials a peer that listens on both TCP
// and QUIC over TCP (libp2p's default ranker would pick QUIC), and still
// reaches, over QUIC and without waiting out the fallback delay, a peer
// whose TCP address refuses connections.
func TestDialTCPFirst(t *testing.T) {
	both := []string{transportListen["tcp"], transportListen["quic"]}
	srv, err := transport.NewLibp2pHost(nil, both)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var tcpAddr, quicAddr ma.Multiaddr
	for _, a := range srv.Addrs() {
		if transport.IsPlainTCP(a) {
			tcpAddr = a
		} else {
			quicAddr = a
		}
	}
	if tcpAddr == nil || quicAddr == nil {
		t.Fatalf("listener addresses %v: want one TCP and one QUIC", srv.Addrs())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		cl, err := transport.NewLibp2pHost(nil, both)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.Connect(ctx, peer.AddrInfo{ID: srv.ID(), Addrs: srv.Addrs()}); err != nil {
			t.Fatal(err)
		}
		if got := connTransport(cl, srv.ID()); got != "tcp" {
			t.Fatalf("dial %d: connected over %s, want tcp", i, got)
		}
	}
	// A TCP port nobody listens on: the dial fails at once, QUIC follows.
	dead, err := transport.NewLibp2pHost(nil, []string{transportListen["tcp"]})
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addrs()[0]
	dead.Close()
	cl, err := transport.NewLibp2pHost(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	if err := cl.Connect(ctx, peer.AddrInfo{ID: srv.ID(), Addrs: []ma.Multiaddr{deadAddr, quicAddr}}); err != nil {
		t.Fatal(err)
	}
	if got := connTransport(cl, srv.ID()); got != "quic" {
		t.Fatalf("fallback connected over %s, want quic", got)
	}
	t.Logf("QUIC fallback after a refused TCP dial took %v", time.Since(start))
}

// TestTCPFirstRanker: TCP addresses are ranked before QUIC ones, which
// wait transport.QUICFallbackDelay; with no TCP address QUIC is dialed at once.
func TestTCPFirstRanker(t *testing.T) {
	tcp := ma.StringCast("/ip4/10.0.0.1/tcp/4433")
	quic := ma.StringCast("/ip4/10.0.0.1/udp/4433/quic-v1")
	got := transport.TCPFirstRanker([]ma.Multiaddr{quic, tcp})
	if len(got) != 2 || !got[0].Addr.Equal(tcp) || got[0].Delay != 0 || !got[1].Addr.Equal(quic) || got[1].Delay < transport.QUICFallbackDelay {
		t.Fatalf("ranked %v", got)
	}
	got = transport.TCPFirstRanker([]ma.Multiaddr{quic})
	if len(got) != 1 || got[0].Delay != 0 {
		t.Fatalf("QUIC alone ranked %v", got)
	}
}
