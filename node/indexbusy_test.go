//go:build riffletest

package node

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
	"github.com/riffle-net/riffle/store"
)

// TestIndexBusyAskedAgain (issue 28): every client of a primary syncs the
// index at the same checkpoint rounds, and at n = 200 a primary's 67 or
// so clients are more than its slots.MaxIndexServing slots, so a third to a
// half of them were refused, their checkpoint's manifests left to the
// next epoch. A client now asks a busy server again after a random
// delay: with every slot of its primary held for a second, its sync ends
// within the checkpoint's half for the primary.
func TestIndexBusyAskedAgain(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 2, 1, 1, testParams(4), nil)
		s, c := tn.servers[0], tn.clients[0]
		const held = time.Second
		g := &s.ix.Slots
		g.Add(slots.MaxIndexServing)
		freed := make(chan struct{})
		go func() {
			defer close(freed)
			time.Sleep(held)
			g.Add(-slots.MaxIndexServing)
		}()
		defer func() { <-freed }()
		ctx, cancel := context.WithTimeout(context.Background(), proto.CheckpointSyncTime/2)
		defer cancel()
		start := time.Now()
		_, _, err := c.Inspect().SyncIndex(ctx)
		took := time.Since(start)
		t.Logf("the primary's %d index slots held for %v: the sync ended after %v: %v", slots.MaxIndexServing, held, took.Round(time.Millisecond), err)
		if err != nil {
			t.Fatalf("a client's sync with its primary's slots held for %v: %v", held, err)
		}
		if took < held {
			t.Fatalf("the sync ended after %v, before the slots were free", took)
		}
	})
}

// TestIndexSlotsPerClient (issue 28): a registered client's index pages
// took no slot of a table of their own, only the server's 32, so one
// client (or a few of them), asking for pages and never reading them,
// held every slot while the other clients' checkpoint syncs were refused.
// Now a registered client holds at most slots.MaxIndexPerClient at once, and
// takes one again once its pages end. Before: 32 of 32.
func TestIndexSlotsPerClient(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 2, 1, 1, testParams(4), nil)
		s, c := tn.servers[0], tn.clients[0]
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool { return s.peers.Client(c.Inspect().PeerID()) }); err != nil {
			t.Fatal("the client never registered")
		}
		ctx, cancel := context.WithCancel(context.Background())
		got := 0
		for range slots.MaxIndexServing {
			if s.ix.Pages.Enter(ctx, c.Inspect().PeerID()) == nil {
				got++
			}
		}
		t.Logf("a registered client took %d of %d index slots", got, slots.MaxIndexServing)
		// Its own syncs may hold one of them meanwhile.
		if got > slots.MaxIndexPerClient || got == 0 {
			cancel()
			t.Fatalf("a registered client took %d index slots at once, want at most %d", got, slots.MaxIndexPerClient)
		}
		cancel()
		if err := wait.Until(context.Background(), 10*time.Second, func() bool {
			sctx, stop := context.WithCancel(context.Background())
			defer stop()
			return s.ix.Pages.Enter(sctx, c.Inspect().PeerID()) == nil
		}); err != nil {
			t.Fatal("the client's slots were not given back")
		}
	})
}

// TestIndexSlotsClientRange (issue 28): the clients' index slots had a
// cap a client and none a range, so 16 registered clients of one /24 (a
// primary takes n_max/2 first-time keys of one range), each holding
// slots.MaxIndexPerClient pages it never reads, held every slot while the other
// clients' syncs were refused. Now one range's clients hold at most
// slots.MaxClientIndexPerRange, and a client of another range is served.
// Before: 32 of 32 slots held, the other range's client refused.
func TestIndexSlotsClientRange(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		clientSlotsOfRange(t, slots.MaxIndexServing/slots.MaxIndexPerClient, slots.MaxClientIndexPerRange, func(i int) net.IP {
			return net.IPv4(10, 68, 0, byte(1+i))
		}, net.IPv4(10, 69, 0, 1))
	})
}

// TestIndexSlotsClientWideRange (issue 28): 12 registered clients of
// three IPv6 /48s of one /32, 4 a /48, each take slots.MaxIndexPerClient index
// pages. They took 24 of 32, each /48 within its share; now the /32 holds
// at most slots.MaxClientIndexPerWide, and a client of another /32 is served.
func TestIndexSlotsClientWideRange(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const per = slots.MaxClientIndexPerRange / slots.MaxIndexPerClient
		clientSlotsOfRange(t, 3*per, slots.MaxClientIndexPerWide, func(i int) net.IP {
			return net.ParseIP(fmt.Sprintf("2001:470:%x::%x", 1+i/per, 1+i%per))
		}, net.ParseIP("2001:db8:1::1"))
	})
}

// clientSlotsOfRange registers n clients at addresses addr(0..n−1) and
// one at other with a server, has each of the n take slots.MaxIndexPerClient
// index slots, and checks that they hold at most limit and that the other
// client then takes one.
func clientSlotsOfRange(t *testing.T, n, limit int, addr func(int) net.IP, other net.IP) {
	tn := startAnonNet(t, 2, 0, 1, testParams(4), nil)
	s, mn := tn.servers[0], testMemnet(t)
	var cs []*Client
	for i := range n + 1 {
		ip := other
		if i < n {
			ip = addr(i)
		}
		c, err := NewClient(context.Background(), ClientConfig{Network: fromNet{mn, ip}, MinAnonymity: 1, Now: true, Server: s.Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	if err := wait.Until(context.Background(), 5*time.Minute, func() bool {
		for _, c := range cs {
			if !s.peers.Client(c.Inspect().PeerID()) {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal("the clients never registered at once")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := 0
	for _, c := range cs[:n] {
		for range slots.MaxIndexPerClient {
			if s.ix.Pages.Enter(ctx, c.Inspect().PeerID()) == nil {
				got++
			}
		}
	}
	honest := s.ix.Pages.Enter(ctx, cs[n].Inspect().PeerID())
	t.Logf("%d registered clients of one range took %d index slots (cap %d); a client of another range: %v", n, got, limit, honest)
	if got > limit || got == 0 {
		t.Errorf("the clients of one range took %d index slots, want at most %d", got, limit)
	}
	if honest != nil {
		t.Errorf("a registered client of another range was refused: %v", honest)
	}
}

// fromNet is the test's network with its hosts' connections from ip.
type fromNet struct {
	mn *memnet.Net
	ip net.IP
}

func (n fromNet) NewHost(priv crypto.PrivKey, listen []string) (transport.Host, error) {
	return n.mn.NewHostFrom(priv, listen, n.ip)
}

// TestIndexSyncFailedAsksEveryServer (§7 v3, issue 26): when a client's
// sync at an epoch's start from its primary fails (every index slot of
// the primary held), the client syncs from every other server of the
// chain at once. Before, it drew one of them at random and stopped
// there once it went through, so which server a client turned to was a
// draw: with the rule before, one of the two is asked and the test fails.
func TestIndexSyncFailedAsksEveryServer(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var (
			mu     sync.Mutex
			target peer.ID
			served = map[int]int{} // pages served to the client, by server
		)
		tn := startAnonNet(t, 3, 0, 1, testParams(4), func(i int, c *ServerConfig) {
			c.observe = &testObserver{IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
				mu.Lock()
				defer mu.Unlock()
				if to == target {
					served[i]++
				}
				return mans
			}}
		})
		s := tn.servers[0]
		g := &s.ix.Slots
		var once sync.Once
		held := make(chan struct{})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: s.Addrs()[0].String(), Logger: anonLogger(),
			ClientHookCfg: ClientHookCfg{Observe: &ClientObserver{Joined: func([32]byte, uint32, []byte) {
				// Before the epoch's sync: the primary refuses it.
				once.Do(func() {
					g.Add(slots.MaxIndexServing)
					close(held)
				})
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		mu.Lock()
		target = c.Inspect().PeerID()
		mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			t.Fatal("the client took no epoch")
		}
		defer func() {
			g.Add(-slots.MaxIndexServing)
		}()
		count := func() (int, int, int) {
			mu.Lock()
			defer mu.Unlock()
			return served[0], served[1], served[2]
		}
		if err := wait.Until(ctx, time.Minute, func() bool { _, a, b := count(); return a+b > 0 }); err != nil {
			t.Fatal("no other server was asked")
		}
		// At once: both within a second of the first.
		err = wait.Until(ctx, time.Second, func() bool { _, a, b := count(); return a > 0 && b > 0 })
		p0, p1, p2 := count()
		t.Logf("the primary's sync refused: pages served by the primary %d, the other servers %d and %d", p0, p1, p2)
		if err != nil {
			t.Fatalf("one other server was asked (%d and %d pages), not every one", p1, p2)
		}
	})
}
