package transport_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

const (
	protoEcho   protocol.ID = "/riffle-test/echo/1"
	protoReset  protocol.ID = "/riffle-test/reset/1"
	protoSilent protocol.ID = "/riffle-test/silent/1"
	protoBig    protocol.ID = "/riffle-test/big/1"
)

// conformance runs the same checks against a network: what node relies on
// from a transport (docs/proto-node.md "Streams").
func conformance(t *testing.T, nw transport.Network) {
	srv, err := nw.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := nw.NewHost(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if len(cl.Addrs()) != 0 || len(srv.Addrs()) == 0 {
		t.Fatalf("addresses: client %v, server %v", cl.Addrs(), srv.Addrs())
	}
	from := make(chan peer.ID, 4)
	srv.SetStreamHandler(protoEcho, func(s transport.Stream) {
		from <- s.RemotePeer()
		b, err := io.ReadAll(s)
		if err != nil {
			s.Reset()
			return
		}
		sum := sha256.Sum256(b)
		s.Write(sum[:])
		s.Close()
	})
	srv.SetStreamHandler(protoReset, func(s transport.Stream) {
		var b [1]byte
		io.ReadFull(s, b[:])
		s.Reset()
	})
	release := make(chan struct{})
	srv.SetStreamHandler(protoSilent, func(s transport.Stream) {
		<-release
		s.Reset()
	})
	// A reply bigger than a stream's window (libp2p's first, memnet's
	// 16 MiB) whose send a ReplyBound ends after 300 ms (and 20 ms for its
	// size), not the protocol's minute.
	var g transport.Gate
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	transport.ServeBounded(sctx, srv, &g, slog.New(slog.DiscardHandler), protoBig, time.Minute, transport.ReplyBound{Base: 300 * time.Millisecond, Rate: 1 << 30}, func(peer.ID, wire.Type) int { return 64 }, nil,
		func(context.Context, peer.ID, wire.Type, []byte) (wire.Type, [][]byte, error) {
			return wire.TypeAck, [][]byte{make([]byte, 20<<20)}, nil
		})
	down := make(chan peer.ID, 4)
	srv.OnDisconnect(func(p peer.ID) { down <- p })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Connect(ctx, peer.AddrInfo{ID: srv.ID(), Addrs: srv.Addrs()}); err != nil {
		t.Fatal(err)
	}
	if !cl.Connected(srv.ID()) {
		t.Fatal("not connected after Connect")
	}

	step(t, "echo", func() {
		s, err := cl.NewStream(ctx, srv.ID(), protoEcho)
		if err != nil {
			t.Fatal(err)
		}
		msg := bytes.Repeat([]byte("riffle"), 100_000) // several windows' worth of frames
		if _, err := s.Write(msg); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		want := sha256.Sum256(msg)
		if !bytes.Equal(got, want[:]) {
			t.Fatalf("echo digest %x, want %x", got, want)
		}
		s.Close()
		if p := <-from; p != cl.ID() {
			t.Fatalf("remote peer %s, want %s", p, cl.ID())
		}
		if len(srv.RemoteAddrs(cl.ID())) == 0 {
			t.Fatal("no remote address of a connected client")
		}
	})
	step(t, "reset", func() {
		s, err := cl.NewStream(ctx, srv.ID(), protoReset)
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte{1})
		if _, err := io.ReadAll(s); err == nil {
			t.Fatal("a reset stream read to EOF")
		}
	})
	step(t, "deadline", func() {
		s, err := cl.NewStream(ctx, srv.ID(), protoSilent)
		if err != nil {
			t.Fatal(err)
		}
		s.SetDeadline(time.Now().Add(200 * time.Millisecond))
		start := time.Now()
		var b [1]byte
		_, err = s.Read(b[:])
		if err == nil {
			t.Fatal("a read past the deadline returned")
		}
		if d := time.Since(start); d < 150*time.Millisecond || d > 10*time.Second {
			t.Fatalf("the deadline fired after %v", d)
		}
		s.Reset()
	})
	step(t, "reply deadline", func() {
		s, err := cl.NewStream(ctx, srv.ID(), protoBig)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.WriteFrame(s, wire.TypeAck, nil); err != nil {
			t.Fatal(err)
		}
		s.CloseWrite()
		// Not read for a second: the server's send blocks, and ends at
		// its reply deadline.
		time.Sleep(time.Second)
		s.SetDeadline(time.Now().Add(10 * time.Second))
		if b, err := io.ReadAll(s); err == nil {
			t.Fatalf("a reply read whole (%d bytes) after its send's deadline", len(b))
		}
		s.Reset()
	})
	step(t, "unknown protocol", func() {
		s, err := cl.NewStream(ctx, srv.ID(), "/riffle-test/none/1")
		if err == nil {
			// libp2p negotiates lazily: the refusal shows at the first read.
			s.Write([]byte{1})
			_, err = io.ReadAll(s)
		}
		if err == nil {
			t.Fatal("a stream of an unserved protocol worked")
		}
	})
	step(t, "no route", func() {
		other, err := nw.NewHost(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		bad := ma.StringCast("/ip4/127.0.0.1/tcp/1")
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		if err := cl.Connect(dctx, peer.AddrInfo{ID: other.ID(), Addrs: []ma.Multiaddr{bad}}); err == nil {
			t.Fatal("dialled a host at an address it does not listen on")
		}
	})
	close(release)
	step(t, "disconnect", func() {
		cl.Close()
		select {
		case p := <-down:
			if p != cl.ID() {
				t.Fatalf("disconnect of %s, want %s", p, cl.ID())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no disconnect seen")
		}
		if srv.Connected(cl.ID()) {
			t.Fatal("still connected to a closed host")
		}
	})
}

func TestConformanceLibp2p(t *testing.T) { conformance(t, transport.Libp2p{}) }

func TestConformanceMemnet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conformance(t, memnet.New(memnet.Link{Latency: 5 * time.Millisecond, Bandwidth: 10 << 20}, 1))
	})
}

// step logs a check's name and runs it (no subtests: a synctest bubble
// allows none).
func step(t *testing.T, name string, f func()) {
	t.Log(name)
	f()
}
