//go:build riffletest

package node

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// slowReaders are peers with no role that ask servers for the decoy window
// and do not read the reply: each server's link to them lets 256 bytes be
// in flight (a window reply is kilobytes here, hundreds of them at full
// size, beyond libp2p's first stream window), so the server's send blocks
// until the stream's deadline. One goroutine per (peer, server) asks
// again once its stream ended, or 200 ms after a refusal; held counts the
// slots they hold. stop ends them all.
type slowReaders struct {
	held  atomic.Int64
	done  chan struct{}
	hosts []transport.Host
	wg    sync.WaitGroup
	// ask is the request and the reply's type (nil: the window); every
	// is how often a held reply is read a byte of (0: 100 ms).
	ask   func(s *Server) (wire.Type, []byte, wire.Type)
	every time.Duration
}

// stop closes the peers and waits for their goroutines (the bubble's end
// waits for none).
func (sr *slowReaders) stop() {
	close(sr.done)
	for _, h := range sr.hosts {
		h.Close()
	}
	sr.wg.Wait()
}

// sleep waits d, or until stop: false then.
func (sr *slowReaders) sleep(d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-sr.done:
		return false
	}
}

// startSlowReaders starts n such peers, ranges of them from each IPv4 /24
// 10.66.r.0 (n / ranges a range), against every server of servers, until
// ctx ends; the caller stops them.
func startSlowReaders(ctx context.Context, t *testing.T, servers []*Server, n, ranges int) *slowReaders {
	t.Helper()
	return startSlowReadersOf(ctx, t, servers, n, ranges, &slowReaders{})
}

// startSlowReadersOf is startSlowReaders with sr's request and pace.
func startSlowReadersOf(ctx context.Context, t *testing.T, servers []*Server, n, ranges int, sr *slowReaders) *slowReaders {
	t.Helper()
	mn := testMemnet(t)
	sr.done = make(chan struct{})
	if sr.ask == nil {
		sr.ask = func(s *Server) (wire.Type, []byte, wire.Type) {
			return wire.TypeWindowReq, (&wire.WindowReq{Number: s.certTop() + 1}).Marshal(), wire.TypeWindow
		}
	}
	if sr.every == 0 {
		sr.every = 100 * time.Millisecond
	}
	for i := range n {
		h, err := mn.NewHostFrom(nil, nil, net.IPv4(10, 66, byte(i%ranges), byte(1+i/ranges)))
		if err != nil {
			t.Fatal(err)
		}
		sr.hosts = append(sr.hosts, h)
		for _, s := range servers {
			mn.SetLink(s.ID(), h.ID(), memnet.Link{Latency: time.Millisecond, Window: 256})
			h.AddAddrs(s.ID(), s.Addrs(), time.Hour)
			sr.wg.Add(1)
			go func() { defer sr.wg.Done(); sr.hold(ctx, h, s) }()
		}
	}
	return sr
}

// hold asks s sr.ask's request (the window before its next number) again
// and again, while ctx lasts, and never reads a reply past its first
// byte, then one byte each sr.every (100 ms) to see whether the server ended the stream (10 B/s: a
// reply of kilobytes takes minutes), and asks again at once. A stream it
// holds when ctx ends it leaves to the server to end.
func (sr *slowReaders) hold(ctx context.Context, h transport.Host, s *Server) {
	for ctx.Err() == nil {
		st, err := h.NewStream(ctx, s.ID(), ProtoClient)
		if err != nil {
			if !sr.sleep(200 * time.Millisecond) {
				return
			}
			continue
		}
		qt, req, rt := sr.ask(s)
		if wire.WriteFrame(st, qt, req) != nil || st.CloseWrite() != nil {
			st.Reset()
			continue
		}
		b := make([]byte, 1)
		if _, err := st.Read(b); err != nil || wire.Type(b[0]) != rt {
			st.Reset()
			if !sr.sleep(200 * time.Millisecond) {
				return
			}
			continue
		}
		sr.held.Add(1)
		for sr.sleep(sr.every) {
			if _, err := st.Read(b); err != nil {
				break
			}
		}
		sr.held.Add(-1)
		st.Reset()
	}
}

// keepRecords makes each epoch's S_0 keep its closing record to itself, and
// every server its closing signature: the record's S_0 is the only server
// that holds it, and a member of a later chain that pins it takes it from
// that chain's leader.
func keepRecords(servers []*Server) {
	for _, s := range servers {
		self := s.ID()
		s.hooks.Store(&serverHooks{closingTo: func(p peer.ID) bool { return p == self }, closingSigTo: func(peer.ID) bool { return false }})
	}
}

// TestWindowSlotsHeld (issue 25, the decoy window; docs/testing.md, the
// attack table): 64 peers with no role, of one /24, hold the window slots
// of every server (slowReaders) from the third epoch on, in a group of
// three needing all three, whose first servers hand their closing records
// and signatures to nobody, so that every member takes the window's
// records from N's leader before it answers N's Prepare. They held all 32
// client slots of a server each for a poll's 10 min: the members' fetches
// from the leader, which took those slots, were refused, every member
// refused every Prepare, and no epoch ran; the clients found every server
// busy and sat out. Now the members fetch over the epoch protocol, in
// slots of their own that only the group's servers take, one /24 holds a
// quarter of the client slots, and a held reply ends after
// Tunables.ClientReply and its size at clientReplyRate: every client takes
// part in three more epochs, none sits out, and a share acknowledged under
// the attack is fetched.
func TestWindowSlotsHeld(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		fn := startFounded(t, 3, 0, 3, testParams(4), nil)
		var logs []*lockedBuf
		for range 3 {
			l := &lockedBuf{}
			fn.addClientCfg(t, func(c *ClientConfig) { c.Progress = l })
			logs = append(logs, l)
		}
		keepRecords(fn.servers)
		fn.waitEpochs(t, 1, 2*time.Minute)
		satBefore := 0
		for _, l := range logs {
			satBefore += strings.Count(l.String(), "sitting out")
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sr := startSlowReaders(ctx, t, fn.servers, 64, 1)
		defer sr.stop()
		if err := wait.Until(ctx, 30*time.Second, func() bool { return sr.held.Load() >= maxWindowPerRange }); err != nil {
			t.Fatalf("the slow readers hold %d slots, want at least %d", sr.held.Load(), maxWindowPerRange)
		}
		e0 := fn.epochs()
		took := fn.waitEpochs(t, e0+2, 3*time.Minute)
		fn.shareFetch(t, 5*time.Minute)
		sat := -satBefore
		for _, l := range logs {
			sat += strings.Count(l.String(), "sitting out")
		}
		if sat > 0 {
			t.Errorf("%d epochs sat out by a client for want of the window", sat)
		}
		t.Logf("64 slow readers of one /24 holding %d window slots: 3 epochs for every client in %v, %d sat out; numbers %v", sr.held.Load(), took.Round(100*time.Millisecond), sat, fn.numbers())
	})
}

// TestWindowSlotDeadline (issue 25, the decoy window): 32 slow readers of
// four /24s take every client window slot of a server, once. A client is
// refused ("try again") only until the short deadline of their replies,
// Tunables.ClientReply plus a second per clientReplyRate bytes, ends them;
// then it is served. Held to the stream's deadline, a poll's 10 min, the
// slots stayed taken: the client was refused for as long as it asked.
func TestWindowSlotDeadline(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const replyWait = 3 * time.Second
		tn := startAnonNet(t, 2, 2, 2, testParams(4), func(_ int, c *ServerConfig) { c.Timing.ClientReply = replyWait })
		s := tn.servers[0]
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool { return s.certTop() >= 4 }); err != nil {
			t.Fatalf("no epochs: numbers at %d", s.certTop())
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sr := startSlowReaders(ctx, t, []*Server{s}, maxWindowServing, maxWindowServing/maxWindowPerRange)
		defer sr.stop()
		if err := wait.Until(ctx, 10*time.Second, func() bool { return sr.held.Load() == maxWindowServing }); err != nil {
			t.Fatalf("the slow readers hold %d slots, want %d", sr.held.Load(), maxWindowServing)
		}
		// From now on they ask no more: what is left is their hold.
		cancel()
		start := time.Now()
		probe, err := newHost(t, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer probe.Close()
		probe.AddAddrs(s.ID(), s.Addrs(), time.Hour)
		req := (&wire.WindowReq{Number: s.certTop() + 1}).Marshal()
		var rep []byte
		refused := 0
		for time.Since(start) < time.Minute {
			rep, err = call(context.Background(), probe, s.ID(), request{Proto: ProtoClient, Type: wire.TypeWindowReq, Body: req, Timeout: shortTimeout})
			if !errors.Is(err, errWindowBusy) {
				break
			}
			refused++
			time.Sleep(100 * time.Millisecond)
		}
		kept := time.Since(start)
		if err != nil {
			t.Fatalf("a client's window request after %v (%d refused): %v", kept, refused, err)
		}
		bound := replyWait + time.Duration(len(rep))*time.Second/clientReplyRate + time.Second
		if refused == 0 || kept > bound {
			t.Errorf("the client was refused %d times over %v, want at least once and within %v", refused, kept, bound)
		}
		t.Logf("%d slow readers of four /24s held every window slot: a client refused %d times over %v (reply %d bytes, bound %v)", maxWindowServing, refused, kept.Round(10*time.Millisecond), len(rep), bound)
	})
}

// TestWindowHeldAtLeader (issue 25, the decoy window): 32 slow readers of
// four /24s hold every client window slot of one server of three, taking
// each again within 100 ms of its end, while the epochs' first servers
// hand their closing records and signatures to nobody: the attacked
// server is every chain's S_0, the only one that holds the records, and
// the members take the newest from it when it leads. Members fetched
// from the leader in those slots: at each of that server's turns as
// leader every member refused its Prepare, and its numbers ended in
// timeout certificates. Now they fetch over the epoch protocol: every
// number after the attack began is final, that server's turns included;
// the clients take the window from the other servers.
func TestWindowHeldAtLeader(t *testing.T) {
	if raceOn && testing.Short() {
		t.Skip("heavy under -race: the full pass runs it; -race covers the same paths in TestWindowSlotsHeld and TestWindowSlotDeadline")
	}
	t.Parallel()
	virtual(t, func(t *testing.T) {
		fn := startFounded(t, 3, 3, 3, testParams(4), func(_ int, c *ServerConfig) { c.LeaderTimeout = 2 * time.Second })
		keepRecords(fn.servers)
		fn.waitEpochs(t, 1, 2*time.Minute)
		// x is every chain's S_0 (the lowest id), so the only server
		// that holds each record: at its turns it pins the newest, which
		// the members lack (the catch-up leaves the newest numbers to
		// later passes).
		x := fn.servers[0]
		for _, s := range fn.servers {
			if s.ID() < x.ID() {
				x = s
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sr := startSlowReaders(ctx, t, []*Server{x}, maxWindowServing, maxWindowServing/maxWindowPerRange)
		defer sr.stop()
		if err := wait.Until(ctx, 30*time.Second, func() bool { return sr.held.Load() == maxWindowServing }); err != nil {
			t.Fatalf("the slow readers hold %d slots, want %d", sr.held.Load(), maxWindowServing)
		}
		from := x.certTop() + 1
		// Six numbers on: two of them led by x.
		if err := wait.Until(ctx, 3*time.Minute, func() bool { return x.certTop() >= from+6 }); err != nil {
			t.Fatalf("numbers at %d, want %d", x.certTop(), from+6)
		}
		var kinds []string
		led, bad := 0, 0
		for n := from; n < from+6; n++ {
			c, ok := x.certOf(n)
			if !ok {
				t.Fatalf("no certificate of %d", n)
			}
			chain := make([]peer.ID, len(c.Chain))
			for i, b := range c.Chain {
				chain[i] = peer.ID(b)
			}
			if c.Kind == wire.CertFinal && leaderOf(n, chain) == x.ID() {
				led++
			}
			if c.Kind != wire.CertFinal {
				bad++
			}
			kinds = append(kinds, map[uint8]string{wire.CertFinal: "final", wire.CertAbort: "abort", wire.CertTimeout: "timeout"}[c.Kind])
		}
		t.Logf("every client window slot of one server of three held from 4 /24s: numbers %d to %d %v, %d final ones led by it; %d slots held", from, from+5, kinds, led, sr.held.Load())
		if bad > 0 {
			t.Errorf("%d of 6 numbers not final under the attack", bad)
		}
		if led == 0 {
			t.Error("the attacked server led no final number")
		}
	})
}

// TestWouldServeWindow (issue 25, the decoy window): a server asked
// whether it would serve answers as it would answer the Prepare, the
// window included: yes to the window an open epoch pinned, which it holds;
// no to one pinning a record that neither it nor the asker holds, whose
// Prepare it would refuse. It answered yes: left out of an attempt for want
// of the window, it made every other member refuse the attempt that left
// it out.
func TestWouldServeWindow(t *testing.T) {
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 3, 2, 2, testParams(4), nil)
		asked, from := tn.servers[2], tn.servers[1].ID()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// The newest epoch here whose descriptor pins a window.
		var d *wire.Descriptor
		var chain []peer.ID
		if err := wait.Until(ctx, 3*time.Minute, func() bool {
			asked.mu.Lock()
			defer asked.mu.Unlock()
			for _, e := range asked.epochs {
				if e.v != nil && len(e.v.desc.Window) > 0 && (d == nil || e.v.desc.Number > d.Number) {
					d, chain = e.v.desc, e.v.chain
				}
			}
			return d != nil
		}); err != nil {
			t.Fatal("no epoch pinned a window")
		}
		q := wire.Prepare{Number: d.Number, Params: d.Params, Chain: chainIDs(chain), Previous: d.Previous, Window: d.Window}
		if _, _, err := asked.onWouldServe(ctx, from, q.Marshal()); err != nil {
			t.Fatalf("a server would not serve with the window epoch %d pinned: %v", d.Number, err)
		}
		q.Window = append([]wire.WindowRef(nil), d.Window...)
		q.Window[0].Closing[0] ^= 1
		if _, _, err := asked.onWouldServe(ctx, from, q.Marshal()); err == nil {
			t.Fatal("a server would serve with a window whose record nobody holds (its Prepare would be refused)")
		} else {
			t.Logf("a window pinning a record nobody holds: %v", err)
		}
	})
}
