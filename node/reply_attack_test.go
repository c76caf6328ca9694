//go:build riffletest

package node

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// TestIndexSlotsHeld (issue 25, kin of the decoy window's; docs/testing.md,
// the attack table): 8 peers with no role ask a server for index pages
// and never read them (a byte each 2 s: a page of kilobytes takes hours),
// taking the outsiders' share of its index slots. A server of the group
// catching up reads its pages over the epoch protocol, in slots of its
// own, at once; a client that holds no slot there (one syncing before it
// registers) is refused only until every client reply's short send bound,
// Tunables.ClientReply plus its size at clientReplyRate, ends theirs.
// Before, catch-up read through those slots and both were refused for
// the stream's 10 min.
func TestIndexSlotsHeld(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const replyWait = 3 * time.Second
		tn := startAnonNet(t, 2, 2, 2, testParams(4), func(_ int, c *ServerConfig) { c.Timing.ClientReply = replyWait })
		s := tn.servers[0]
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool { return s.cert.Top() >= 4 }); err != nil {
			t.Fatalf("no epochs: numbers at %d", s.cert.Top())
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Of slots.MaxOutsiderIndex / slots.MaxOutsiderIndexPerRange ranges: one
		// range holds no more (TestIndexSlotsPerRange).
		sr := startSlowReadersOf(ctx, t, []*Server{s}, slots.MaxOutsiderIndex, slots.MaxOutsiderIndex/slots.MaxOutsiderIndexPerRange, &slowReaders{
			ask: func(*Server) (wire.Type, []byte, wire.Type) {
				return wire.TypeIndexReq, (&wire.IndexReq{}).Marshal(), wire.TypeIndex
			},
			every: 2 * time.Second,
		})
		defer sr.stop()
		if err := wait.Until(ctx, 10*time.Second, func() bool { return sr.held.Load() == slots.MaxOutsiderIndex }); err != nil {
			t.Fatalf("the slow readers hold %d index slots, want %d", sr.held.Load(), slots.MaxOutsiderIndex)
		}
		// A server of the group catching up is served while they hold them.
		start := time.Now()
		if _, err := tn.servers[1].ix.Catch.IndexPage(ctx, s.ID(), 0); err != nil || time.Since(start) > time.Second {
			t.Fatalf("a server's index page with the clients' slots held: %v after %v", err, time.Since(start))
		}
		// From now on they ask no more: what is left is their hold.
		cancel()
		refused, kept, bound := servedAfterHold(t, s, wire.TypeIndexReq, (&wire.IndexReq{}).Marshal(), replyWait, func(err error) bool {
			return strings.Contains(err.Error(), "too many index requests")
		})
		t.Logf("%d slow readers held the outsiders' index slots: a server served at once, a client refused %d times over %v (bound %v)", slots.MaxOutsiderIndex, refused, kept.Round(10*time.Millisecond), bound)
	})
}

// TestIndexSlotsPerRange (issue 25): 8 peers with no role, of one /24,
// ask a server for index pages and never read them. They held all
// slots.MaxOutsiderIndex outsiders' slots, and a peer of another range was
// refused until one of them let go. Now one range holds at most
// slots.MaxOutsiderIndexPerRange of them, and the other range's peer is served
// at once.
func TestIndexSlotsPerRange(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 2, 2, 2, testParams(4), nil)
		s := tn.servers[0]
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool { return s.cert.Top() >= 2 }); err != nil {
			t.Fatalf("no epochs: numbers at %d", s.cert.Top())
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sr := startSlowReadersOf(ctx, t, []*Server{s}, slots.MaxOutsiderIndex, 1, &slowReaders{
			ask: func(*Server) (wire.Type, []byte, wire.Type) {
				return wire.TypeIndexReq, (&wire.IndexReq{}).Marshal(), wire.TypeIndex
			},
			every: 2 * time.Second,
		})
		defer sr.stop()
		if err := wait.Until(ctx, 10*time.Second, func() bool { return sr.held.Load() >= slots.MaxOutsiderIndexPerRange }); err != nil {
			t.Fatalf("the slow readers hold %d index slots, want %d", sr.held.Load(), slots.MaxOutsiderIndexPerRange)
		}
		time.Sleep(5 * time.Second) // the others ask again every 200 ms meanwhile
		held := s.ix.Slots.Outsiders.Held()
		mn := testMemnet(t)
		h, err := mn.NewHostFrom(nil, nil, net.IPv4(10, 67, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		h.AddAddrs(s.ID(), s.Addrs(), time.Hour)
		_, err = transport.Call(ctx, h, s.ID(), transport.Request{Proto: ProtoClient, Type: wire.TypeIndexReq, Body: (&wire.IndexReq{}).Marshal(), Timeout: transport.ShortTimeout})
		t.Logf("%d slow readers of one /24 hold %d index slots; a peer of another range: %v", slots.MaxOutsiderIndex, held, err)
		if held > slots.MaxOutsiderIndexPerRange {
			t.Errorf("one /24 holds %d outsiders' index slots, want at most %d", held, slots.MaxOutsiderIndexPerRange)
		}
		if err != nil {
			t.Errorf("a peer of another range was refused: %v", err)
		}
	})
}

// TestIndexSlotsPerWideRange (issue 25): 8 peers with no role, of four
// IPv6 /48s of one /32 (a tunnel broker hands /48s out free), 2 a /48,
// ask a server for index pages and never read them. They held all
// slots.MaxOutsiderIndex outsiders' slots, and a peer of another /32 was refused
// until one of them let go. Now one /32 holds at most
// slots.MaxOutsiderIndexPerWide of them, and the other /32's peer is served at
// once.
func TestIndexSlotsPerWideRange(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 2, 2, 2, testParams(4), nil)
		s := tn.servers[0]
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool { return s.cert.Top() >= 2 }); err != nil {
			t.Fatalf("no epochs: numbers at %d", s.cert.Top())
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const ranges = slots.MaxOutsiderIndex / slots.MaxOutsiderIndexPerRange
		sr := startSlowReadersOf(ctx, t, []*Server{s}, slots.MaxOutsiderIndex, ranges, &slowReaders{
			ask: func(*Server) (wire.Type, []byte, wire.Type) {
				return wire.TypeIndexReq, (&wire.IndexReq{}).Marshal(), wire.TypeIndex
			},
			every: 2 * time.Second,
			addr: func(i int) net.IP {
				return net.ParseIP(fmt.Sprintf("2001:470:%x::%x", 1+i%ranges, 1+i/ranges))
			},
		})
		defer sr.stop()
		if err := wait.Until(ctx, 10*time.Second, func() bool { return sr.held.Load() >= slots.MaxOutsiderIndexPerWide }); err != nil {
			t.Fatalf("the slow readers hold %d index slots, want %d", sr.held.Load(), slots.MaxOutsiderIndexPerWide)
		}
		time.Sleep(5 * time.Second) // the others ask again every 200 ms meanwhile
		held := s.ix.Slots.Outsiders.Held()
		mn := testMemnet(t)
		h, err := mn.NewHostFrom(nil, nil, net.ParseIP("2001:db8:1::1"))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		h.AddAddrs(s.ID(), s.Addrs(), time.Hour)
		_, err = transport.Call(ctx, h, s.ID(), transport.Request{Proto: ProtoClient, Type: wire.TypeIndexReq, Body: (&wire.IndexReq{}).Marshal(), Timeout: transport.ShortTimeout})
		t.Logf("%d slow readers of %d /48s of one /32 hold %d index slots; a peer of another /32: %v", slots.MaxOutsiderIndex, ranges, held, err)
		if held > slots.MaxOutsiderIndexPerWide {
			t.Errorf("one /32 holds %d outsiders' index slots, want at most %d", held, slots.MaxOutsiderIndexPerWide)
		}
		if err != nil {
			t.Errorf("a peer of another /32 was refused: %v", err)
		}
	})
}

// TestPIRReplyHeld (issue 25): a peer with no role sends a server 64 PIR
// queries and never reads the replies (its link lets 16 bytes be in
// flight, less than the shortest refusal). Every reply of the client
// protocols is sent within Tunables.ClientReply plus its size at
// clientReplyRate, so the handlers are free seconds later: the server's
// handlers, waited for as its Close does, end within that. Before, each
// held its handler for the PIR stream's deadline, 10 min, and the
// server's Close waited for them.
func TestPIRReplyHeld(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const replyWait = 3 * time.Second
		tn := startAnonNet(t, 2, 2, 2, testParams(4), func(_ int, c *ServerConfig) { c.Timing.ClientReply = replyWait })
		s := tn.servers[0]
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool { return s.cert.Top() >= 2 }); err != nil {
			t.Fatalf("no epochs: numbers at %d", s.cert.Top())
		}
		mn := testMemnet(t)
		h, err := mn.NewHostFrom(nil, nil, net.IPv4(10, 67, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		mn.SetLink(s.ID(), h.ID(), memnet.Link{Latency: time.Millisecond, Window: 16})
		h.AddAddrs(s.ID(), s.Addrs(), time.Hour)
		const n = 64
		for range n {
			st, err := h.NewStream(context.Background(), s.ID(), ProtoPIR)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Reset()
			if err := wire.WriteFrame(st, wire.TypeQuery, make([]byte, 40)); err != nil || st.CloseWrite() != nil {
				t.Fatalf("query: %v", err)
			}
		}
		time.Sleep(100 * time.Millisecond) // the refusals are written
		s.cancel()
		start := time.Now()
		s.handlers.Close()
		if took := time.Since(start); took > replyWait+time.Second {
			t.Errorf("the server's handlers ended %v after its context, want within %v", took, replyWait+time.Second)
		} else {
			t.Logf("%d PIR replies not read: the handlers ended %v after the server's context", n, took)
		}
	})
}
