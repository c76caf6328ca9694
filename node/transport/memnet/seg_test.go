package memnet

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/riffle-net/riffle/node/transport"
)

const protoEcho = "/riffle-test/echo/1"

// echoPair is a client connected to a host that sends back every stream's
// bytes as they come.
func echoPair(tb testing.TB, n *Net) (cl transport.Host, srv transport.Host) {
	tb.Helper()
	srv, err := n.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
	if err != nil {
		tb.Fatal(err)
	}
	srv.SetStreamHandler(protoEcho, func(s transport.Stream) {
		if _, err := io.Copy(s, s); err != nil {
			s.Reset()
			return
		}
		s.Close()
	})
	cl, err = n.NewHost(nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cl.AddAddrs(srv.ID(), srv.Addrs(), time.Hour)
	return cl, srv
}

// TestSegmentsByteExact: writes of every size class and across segMax,
// each from a buffer the writer overwrites as soon as Write returns, and
// reads of other sizes come back byte-exact through an echo, with several
// streams at once sharing the pooled segment buffers.
func TestSegmentsByteExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, srv := echoPair(t, New(Link{Latency: time.Millisecond, Bandwidth: 64 << 20}, 1))
		done := make(chan error, 4)
		for k := range 4 {
			go func() {
				rng := rand.New(rand.NewPCG(uint64(k), 7))
				s, err := cl.NewStream(context.Background(), srv.ID(), protoEcho)
				if err != nil {
					done <- err
					return
				}
				var want bytes.Buffer
				buf := make([]byte, 3*segMax)
				got := make(chan []byte)
				rb := make([]byte, 1+rng.IntN(100<<10))
				go func() {
					var all []byte
					for {
						n, err := s.Read(rb)
						all = append(all, rb[:n]...)
						if err != nil {
							break
						}
					}
					got <- all
				}()
				for range 60 {
					size := 1 + rng.IntN(len(buf))
					if rng.IntN(2) == 0 {
						size = 1 + rng.IntN(2*segMin)
					}
					for i := range size {
						buf[i] = byte(rng.Uint32())
					}
					want.Write(buf[:size])
					if _, err := s.Write(buf[:size]); err != nil {
						done <- err
						return
					}
					clear(buf) // the writer's buffer is its own again
				}
				s.CloseWrite()
				if all := <-got; !bytes.Equal(all, want.Bytes()) {
					t.Errorf("stream %d: %d bytes back, want %d, or not the same", k, len(all), want.Len())
				}
				done <- nil
			}()
		}
		for range 4 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// BenchmarkStream moves 256 KiB messages over one stream through an echo,
// written and read in 64 KiB pieces (a bufio stream's).
func BenchmarkStream(b *testing.B) {
	cl, srv := echoPair(b, New(Link{}, 1))
	s, err := cl.NewStream(context.Background(), srv.ID(), protoEcho)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Reset()
	msg := make([]byte, 256<<10)
	back := make([]byte, len(msg))
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		go func() {
			for i := 0; i < len(msg); i += 64 << 10 {
				if _, err := s.Write(msg[i : i+64<<10]); err != nil {
					panic(err)
				}
			}
		}()
		if _, err := io.ReadFull(s, back); err != nil {
			b.Fatal(err)
		}
	}
}
