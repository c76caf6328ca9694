//go:build riffletest

package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

// TestSitOutPausesJobs (§6.3 v3, issue 26): when every server refuses a
// client the decoy window, the client sits the epoch out, tells its user
// that this may be a targeted exclusion, and its running get pauses: no
// request of the job goes out, in the epochs after either, until the user
// resumes it; resumed, it finishes with the file's bytes.
func TestSitOutPausesJobs(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var refuse atomic.Bool
		var victim atomic.Pointer[peer.ID]
		tn := startAnonNet(t, 2, 0, 2, testParams(4), func(i int, c *ServerConfig) {
			c.observe = &testObserver{WindowRefuse: func(to peer.ID) bool {
				v := victim.Load()
				return refuse.Load() && v != nil && *v == to
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var (
			mu     sync.Mutex
			asked  = map[[32]byte]int{} // job requests by epoch
			epochs [][32]byte           // epochs joined, in order
		)
		o := &ClientObserver{
			Requested: func(epoch [32]byte, _ uint32, ids [][32]byte) {
				mu.Lock()
				defer mu.Unlock()
				asked[epoch] += len(ids)
			},
			Joined: func(epoch [32]byte, _ uint32, _ []byte) {
				mu.Lock()
				defer mu.Unlock()
				epochs = append(epochs, epoch)
			},
		}
		progress := &lockedBuf{}
		down, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[0].Addrs()[0].String(), Logger: anonLogger(), Progress: progress, ClientHookCfg: ClientHookCfg{Observe: o}})
		if err != nil {
			t.Fatal(err)
		}
		defer down.Close()
		id := down.Inspect().PeerID()
		victim.Store(&id)
		up, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close()
		// A third client, so that epochs run while the victim sits out.
		idle, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer idle.Close()
		// 24 data chunks, k = 2 requests a round, 4 rounds: three epochs
		// of requests at least.
		data := anonRand(t, 24*(16<<10)-300)
		link, err := up.Share(ctx, bytes.NewReader(data), "sitout.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		type res struct {
			path string
			err  error
		}
		done := make(chan res, 1)
		go func() {
			p, err := down.Get(ctx, link, t.TempDir())
			done <- res{p, err}
		}()
		total := func() int {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, x := range asked {
				n += x
			}
			return n
		}
		until(t, ctx, 5*time.Minute, func() bool { return total() > 0 }, "the get sent no request")
		refuse.Store(true)
		until(t, ctx, 5*time.Minute, func() bool { return strings.Contains(progress.String(), "targeted exclusion") }, "no line tells the user it sat out")
		refuse.Store(false)
		until(t, ctx, time.Minute, func() bool { return len(down.Status().Paused) == 1 }, "the get did not pause")
		if p := down.Status().Paused[0]; p.Kind != "get" || !strings.Contains(p.Reason, "targeted exclusion") || !strings.Contains(p.Reason, "riffle resume "+link.ID.String()) {
			t.Fatalf("paused job %+v", p)
		}
		// Two epochs go by with the window back: no request of the job.
		mu.Lock()
		seen, before := len(epochs), 0
		for _, x := range asked {
			before += x
		}
		mu.Unlock()
		until(t, ctx, 5*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(epochs) >= seen+2
		}, "no two epochs after the sit-out")
		if total() != before {
			t.Fatalf("the paused get sent %d requests", total()-before)
		}
		select {
		case r := <-done:
			t.Fatalf("the get ended while paused: %v", r.err)
		default:
		}
		if n := down.Resume(link.ID.String()); n != 1 {
			t.Fatalf("resumed %d jobs", n)
		}
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		got, err := os.ReadFile(r.path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched file differs (%v)", err)
		}
	})
}

// TestSitOutAsksAgain (§6.3 v3, issue 28; riffle bench --processes at
// n = 200, whose servers want every client in every epoch): every server
// refuses one client the decoy window once it has run an epoch, until it
// says it sits out, then serves it again. The group's minimum is all three
// clients, so the epoch it sat out closes only with its registration.
// Before, the client waited for the epoch after it, and no epoch ran
// again; now it asks again, a registration window later, for the epoch
// still open, registers, and every client runs two more epochs.
func TestSitOutAsksAgain(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const m = 3
		var refuse atomic.Bool
		var victim atomic.Pointer[peer.ID]
		tn := startAnonNet(t, m, 0, m, testParams(4), func(i int, c *ServerConfig) {
			c.observe = &testObserver{WindowRefuse: func(to peer.ID) bool {
				v := victim.Load()
				return refuse.Load() && v != nil && *v == to
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		progress := &lockedBuf{}
		var cs []*Client
		for i := range m {
			cfg := ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i].Addrs()[0].String(), Logger: anonLogger()}
			if i == 0 {
				cfg.Progress = progress
			}
			c, err := NewClient(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cs = append(cs, c)
		}
		id := cs[0].Inspect().PeerID()
		victim.Store(&id)
		until(t, ctx, 5*time.Minute, func() bool { return cs[0].Stats().Epochs >= 1 }, "no epoch")
		refuse.Store(true)
		until(t, ctx, 5*time.Minute, func() bool { return strings.Contains(progress.String(), "sitting out") }, "the client did not sit out")
		refuse.Store(false)
		var base [m]int
		for i, c := range cs {
			base[i] = c.Stats().Epochs
		}
		until(t, ctx, 5*time.Minute, func() bool {
			for i, c := range cs {
				if c.Stats().Epochs < base[i]+2 {
					return false
				}
			}
			return true
		}, "no two more epochs after the sit-out")
	})
}

// TestWindowRequestSame (§6.3 v3, issue 26): every client of an epoch, a
// long-running one and one in its first epoch alike, sends every server of
// the chain the same window request, byte for byte: nothing in it says
// what the client held before. (A list of the epochs it held told a
// newcomer from the others.)
func TestWindowRequestSame(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const m = 3
		var mu sync.Mutex
		got := map[string]map[peer.ID]map[int]bool{} // body → client → servers asked
		first := map[peer.ID]string{}                // client → its first request
		tn := startAnonNet(t, m, 2, 2, testParams(4), func(i int, c *ServerConfig) {
			c.observe = &testObserver{Received: func(from peer.ID, ty wire.Type, body []byte) {
				if ty != wire.TypeWindowReq {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				k := string(body)
				if _, ok := first[from]; !ok {
					first[from] = k
				}
				if got[k] == nil {
					got[k] = map[peer.ID]map[int]bool{}
				}
				if got[k][from] == nil {
					got[k][from] = map[int]bool{}
				}
				got[k][from][i] = true
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		// The two clients of startAnonNet run for a few epochs, then a
		// newcomer comes.
		until(t, ctx, 5*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) >= DecoyEpochs+2
		}, "no epochs")
		late, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[2].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer late.Close()
		var body string
		until(t, ctx, 5*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			k, ok := first[late.Inspect().PeerID()]
			body = k
			return ok && len(got[k]) == 3
		}, "the newcomer's first window request is not the others'")
		mu.Lock()
		defer mu.Unlock()
		for p, servers := range got[body] {
			if len(servers) != m {
				t.Errorf("client %s asked %d servers of %d", p.ShortString(), len(servers), m)
			}
		}
	})
}

// TestWindowTwoNumbersOn (§6.3 v3): the window of epoch N holds epochs of
// number at most N − 2, and the newest is N − 2 itself while epochs run to
// their end: an epoch enters the window two numbers on, for every client
// alike, whenever its record reached any of them.
func TestWindowTwoNumbersOn(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var mu sync.Mutex
		newest := map[uint64]uint64{} // N → the window's newest number
		o := &ClientObserver{WindowAt: func(n uint64, nums []uint64) {
			mu.Lock()
			defer mu.Unlock()
			top := uint64(0)
			for _, x := range nums {
				top = max(top, x)
			}
			newest[n] = top
		}}
		tn := startAnonNet(t, 2, 1, 2, testParams(4), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[0].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		until(t, ctx, 5*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(newest) >= 6
		}, "no six windows")
		mu.Lock()
		defer mu.Unlock()
		for n, top := range newest {
			if n >= 3 && top != n-2 {
				t.Errorf("the window of epoch %d: newest epoch %d, want %d", n, top, n-2)
			}
		}
	})
}

// TestWindowAsksPreviousChain (§6.3 v3): a client asks for N's window
// every server of N's chain and, once an answer gives N − 1's descriptor
// (pinned by N's certificate), every server of N − 1's chain too, with the
// same request: the servers that served the window's epochs hold their
// records, and N's chain may be new. Three stand-in servers answer: s1
// and s2 are N's chain, s2 and s3 N − 1's.
func TestWindowAsksPreviousChain(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hosts := windowHosts(t, 4, 3)
		defer closeHosts(hosts)
		prev := &wire.Descriptor{Number: 4, Params: testParams(4).Wire(), Group: []wire.GroupEntry{hostEntry(hosts[1]), hostEntry(hosts[2])}}
		d := &wire.Descriptor{Number: 5, Params: testParams(4).Wire(), Group: []wire.GroupEntry{hostEntry(hosts[0]), hostEntry(hosts[1])},
			Previous: wire.Cert{Kind: wire.CertFinal, Number: 4, Epoch: proto.EpochID(prev)}}
		reply := (&wire.Window{Items: []wire.WindowItem{{Number: 4, Epoch: proto.EpochID(prev), Group: window.GroupBytes(prev)}}}).Marshal()
		var mu sync.Mutex
		asked := map[int][]byte{}
		var g transport.Gate
		for i, h := range hosts[:3] {
			transport.Serve(ctx, h, &g, quietLogger(), ProtoClient, time.Minute, anyPeer(func(wire.Type) int { return 1 << 20 }),
				func(_ context.Context, _ peer.ID, ty wire.Type, body []byte) (wire.Type, []byte, error) {
					mu.Lock()
					asked[i] = append([]byte(nil), body...)
					mu.Unlock()
					if ty != wire.TypeWindowReq {
						return 0, nil, errors.New("not a window request")
					}
					if i == 2 {
						return wire.TypeWindow, (&wire.Window{}).Marshal(), nil
					}
					return wire.TypeWindow, reply, nil
				})
		}
		v := &proto.View{ID: proto.EpochID(d), Desc: d, Chain: []peer.ID{hosts[0].ID(), hosts[1].ID()}}
		if err := FetchWindow(ctx, hosts[3], hosts[0].ID(), v); err != nil {
			t.Fatal(err)
		}
		// The client holds the window before every reply came; each
		// request went out all the same.
		if err := wait.Until(ctx, time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(asked) == 3
		}); err != nil {
			t.Fatal("a server of the chains was never asked")
		}
		mu.Lock()
		defer mu.Unlock()
		want := (&wire.WindowReq{Epoch: v.ID, Number: 5}).Marshal()
		for i := range 3 {
			if !bytes.Equal(asked[i], want) {
				t.Errorf("server %d was asked %x, want %x", i, asked[i], want)
			}
		}
	})
}

// TestWindowFetchNotStalled (§6.3 v3, issue 26): a client asks every
// server of N's and N−1's chains for the window and takes it once it
// holds it, whatever the others have not answered yet: each part is
// pinned, so no later reply could change it. Before, it waited for every
// reply, and a server that stalled its answer (here 15 s, within the
// request's timeout) held the client past the registration window (300
// ms at the tests' parameters): one corrupt server could keep any client
// it chose out of any epoch. The stalling server is still asked.
func TestWindowFetchNotStalled(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hosts := windowHosts(t, 3, 2)
		defer closeHosts(hosts)
		prev := &wire.Descriptor{Number: 4, Params: testParams(4).Wire(), Group: []wire.GroupEntry{hostEntry(hosts[0]), hostEntry(hosts[1])}}
		d := &wire.Descriptor{Number: 5, Params: testParams(4).Wire(), Group: []wire.GroupEntry{hostEntry(hosts[0]), hostEntry(hosts[1])},
			Previous: wire.Cert{Kind: wire.CertFinal, Number: 4, Epoch: proto.EpochID(prev)}}
		reply := (&wire.Window{Items: []wire.WindowItem{{Number: 4, Epoch: proto.EpochID(prev), Group: window.GroupBytes(prev)}}}).Marshal()
		var stalled atomic.Bool
		var g transport.Gate
		for i, h := range hosts[:2] {
			transport.Serve(ctx, h, &g, quietLogger(), ProtoClient, time.Minute, anyPeer(func(wire.Type) int { return 1 << 20 }),
				func(ctx context.Context, _ peer.ID, ty wire.Type, body []byte) (wire.Type, []byte, error) {
					if i == 1 {
						stalled.Store(true)
						select {
						case <-time.After(15 * time.Second):
						case <-ctx.Done():
						}
					}
					return wire.TypeWindow, reply, nil
				})
		}
		v := &proto.View{ID: proto.EpochID(d), Desc: d, Chain: []peer.ID{hosts[0].ID(), hosts[1].ID()}}
		start := time.Now()
		if err := FetchWindow(ctx, hosts[2], hosts[0].ID(), v); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the window took %v: the client waited for the stalled server", took)
		}
		if err := wait.Until(ctx, time.Minute, stalled.Load); err != nil {
			t.Error("the stalling server was never asked")
		}
	})
}

// TestWindowAtClientCap (§6.3 v3; the swarm's m = 3, n = 64 seed 1): every
// client of an epoch asks every chain server for the window at once,
// before it registers, so that no server counts it as one of its clients
// yet. Served from the index pages' slots, of which such peers share 8, a
// server refused all but 8 of them ("try again"): at the client cap (64
// clients at these parameters) 53 found every server busy, sat an epoch
// out and paused their jobs for good. Now window requests have 32 slots of
// their own, one per peer at a time, and a client asks a busy server
// again: over three epochs of 64 clients, none sits out.
func TestWindowAtClientCap(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		const m, n = 3, MinClientCap
		tn := startAnonNet(t, m, 0, 2, testParams(4), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var cs []*Client
		var logs []*lockedBuf
		for i := range n {
			progress := &lockedBuf{}
			c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), Progress: progress, Network: testNet(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cs, logs = append(cs, c), append(logs, progress)
		}
		until(t, ctx, 5*time.Minute, func() bool {
			for _, c := range cs {
				if c.Stats().Epochs < 3 {
					return false
				}
			}
			return true
		}, "not every client took part in three epochs")
		sat := 0
		for _, l := range logs {
			if strings.Contains(l.String(), "sitting out") {
				sat++
			}
		}
		if sat > 0 {
			t.Fatalf("%d of %d clients sat an epoch out for want of the decoy window", sat, n)
		}
	})
}

// windowHosts starts n hosts in the test's network, the first listening
// ones listening (the stand-in servers; the rest dial out only).
func windowHosts(t *testing.T, n, listening int) []transport.Host {
	t.Helper()
	var hosts []transport.Host
	for i := range n {
		var listen []string
		if i < listening {
			listen = []string{"/ip4/127.0.0.1/tcp/0"}
		}
		h, err := newHost(t, nil, listen)
		if err != nil {
			closeHosts(hosts)
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	return hosts
}

func closeHosts(hosts []transport.Host) {
	for _, h := range hosts {
		h.Close()
	}
}

// hostEntry is h as a descriptor's group entry.
func hostEntry(h transport.Host) wire.GroupEntry {
	var addrs [][]byte
	for _, a := range h.Addrs() {
		addrs = append(addrs, a.Bytes())
	}
	return wire.GroupEntry{PeerID: []byte(h.ID()), Nick: []byte("s"), Addrs: addrs}
}
