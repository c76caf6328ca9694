//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/store"
)

// A cast of malicious parties (docs/protocol.md §8): each test runs a real
// network of m = 3 servers and 4 clients on 127.0.0.1, lets one party
// disrupt one round of the first epoch it is in, and checks that every
// honest server names exactly that party, from public evidence, and that
// the honest clients' shares and gets complete byte-exact in a later epoch
// without it.

// faultAt is when the current case's malicious party misbehaved (cases
// run one at a time).
var faultAt atomic.Int64

// fire reports whether the one-shot misbehaviour runs now, and notes when.
func fire(fired *atomic.Bool) bool {
	if !fired.CompareAndSwap(false, true) {
		return false
	}
	faultAt.Store(time.Now().UnixNano())
	return true
}

// sinceFault is the time since the case's fault.
func sinceFault() time.Duration {
	return time.Since(time.Unix(0, faultAt.Load())).Round(time.Millisecond)
}

// rbLogger logs to stderr when RIFFLE_DEBUG is set (quiet otherwise).
func rbLogger() *slog.Logger {
	if os.Getenv("RIFFLE_DEBUG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// blameNet is a network whose servers are indexed by chain position.
type blameNet struct {
	servers []*Server // by chain position
	clients []*Client
}

// startBlameNet starts m servers that accept a chain of minServers and
// waits until each knows all m, so that the first epoch's chain holds all
// of them; then n clients, whose epochs need minClients.
func startBlameNet(t *testing.T, m, minServers, n, minClients int, opts ...func(*ClientConfig)) *blameNet {
	t.Helper()
	return startBlameNetParams(t, testParams(6), m, minServers, n, minClients, opts...)
}

// startBlameNetParams is startBlameNet with parameters p. Each of opts may
// change every client's configuration.
func startBlameNetParams(t *testing.T, p Params, m, minServers, n, minClients int, opts ...func(*ClientConfig)) *blameNet {
	t.Helper()
	return startBlameNetFounded(t, p, m, minServers, n, minClients, false, opts...)
}

// startBlameNetFounded is startBlameNetParams where the m servers, if
// founded, found the group (ServerConfig.Founders), as a group of servers
// does (node/localnet).
func startBlameNetFounded(t *testing.T, p Params, m, minServers, n, minClients int, founded bool, opts ...func(*ClientConfig)) *blameNet {
	t.Helper()
	ctx := context.Background()
	dirs := make([]string, m)
	var founders []peer.ID
	for i := range dirs {
		dirs[i] = t.TempDir()
		if !founded {
			continue
		}
		priv, err := LoadIdentity(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		founders = append(founders, id)
	}
	var servers []*Server
	var peers []string
	for i := 0; i < m; i++ {
		nick := fmt.Sprintf("s%d", i)
		log := rbLogger()
		if log != nil {
			log = log.With("self", nick)
		}
		s, err := NewServer(ctx, ServerConfig{Network: testNet(t), DataDir: dirs[i], Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: peers,
			Nick: nick, MinServers: minServers, MinClients: minClients, NoLAN: true, Params: p, Logger: log, Founders: founders})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		servers = append(servers, s)
		peers = append(peers, s.Addrs()[0].String())
	}
	if err := wait.UntilEvery(context.Background(), linkWait(t, 20*time.Second, 20), 50*time.Millisecond, func() bool {
		ok := true
		for _, s := range servers {
			ok = ok && len(s.chain()) == m
		}
		return ok
	}); err != nil {
		t.Fatal("servers did not find each other")
	}
	byID := map[peer.ID]*Server{}
	for _, s := range servers {
		byID[s.h.ID()] = s
	}
	bn := &blameNet{}
	for _, id := range servers[0].chain() {
		bn.servers = append(bn.servers, byID[id])
	}
	for i := 0; i < n; i++ {
		cfg := ClientConfig{Network: testNet(t), Server: bn.servers[i%m].Addrs()[0].String(), Logger: rbLogger(), MinAnonymity: 1, Now: true}
		for _, o := range opts {
			o(&cfg)
		}
		c, err := NewClient(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		bn.clients = append(bn.clients, c)
	}
	return bn
}

// linkWait is d plus n one-way latencies of the test's links
// (RIFFLE_VIRTUAL_LINK): at testParams(6) an epoch takes about 4.5 s plus
// 47 latencies (docs/testing.md, "Virtual time").
func linkWait(t *testing.T, d time.Duration, n int) time.Duration {
	return d + time.Duration(n)*virtualLink(t).Latency
}

// culpritRecords waits until every server in honest has a blame record and
// returns them.
func culpritRecords(t *testing.T, honest []*Server) []store.BlameRecord {
	t.Helper()
	var recs []store.BlameRecord
	within := linkWait(t, 60*time.Second, 60)
	if err := wait.UntilEvery(context.Background(), within, 100*time.Millisecond, func() bool {
		recs = recs[:0]
		for _, s := range honest {
			rs, err := s.rb.Records()
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) > 0 {
				recs = append(recs, rs[0])
			}
			if len(rs) > 1 {
				t.Fatalf("server %s has %d blame records: %+v", s.h.ID().ShortString(), len(rs), rs)
			}
		}
		return len(recs) == len(honest)
	}); err != nil {
		t.Fatalf("only %d of %d honest servers named a culprit within %v", len(recs), len(honest), within)
	}
	return recs
}

// shareAndGet shares a file from one honest client and gets it through
// another, byte-exact.
func shareAndGet(t *testing.T, up, down *Client) {
	t.Helper()
	// A share and a get take an epoch or two.
	ctx, cancel := context.WithTimeout(context.Background(), linkWait(t, 90*time.Second, 150))
	defer cancel()
	data := make([]byte, 20<<10)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	// A share whose chunks went out in an epoch that a malicious server
	// then ended warns that the file may be incomplete (its chunks count
	// as published); the user shares again, as the warning says.
	var link chunker.Link
	for try := 0; ; try++ {
		h, err := up.StartShare(ctx, bytes.NewReader(data), "after-blame.bin", false)
		if err != nil {
			t.Fatalf("share after the blame: %v", err)
		}
		select {
		case <-h.Done():
		case <-ctx.Done():
			t.Fatal("share after the blame did not end in time")
		}
		var warn []string
		link, _, warn, err = h.Result()
		if err != nil {
			t.Fatalf("share after the blame: %v", err)
		}
		if len(warn) == 0 {
			break
		}
		if try == 2 {
			t.Fatalf("share after the blame: still incomplete after %d tries: %q", try+1, warn)
		}
		t.Logf("share after the blame warned, shared again: %q", warn)
	}
	path, err := down.Get(ctx, link, t.TempDir())
	if err != nil {
		t.Fatalf("get after the blame: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("fetched bytes differ after the blame")
	}

}

// TestRoundBlameClientMAC: a client whose onion fails its MAC at layer j
// (it seals layer j under a wrong MAC key, so layers before j open) is
// named by every server, and only its slot is walked.
func TestRoundBlameClientMAC(t *testing.T) {
	t.Parallel()
	layers := []int{0, 1, 2}
	if testing.Short() {
		layers = []int{1}
	}
	for _, layer := range layers {
		t.Run(fmt.Sprintf("layer%d", layer), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				bn := startBlameNet(t, 3, 3, 4, 3)
				bad := bn.clients[1]
				var fired atomic.Bool
				var mu sync.Mutex
				var badEpoch [32]byte
				var badSlot uint32
				bad.Hooks.Store(&ClientHooks{LayerKeys: func(epoch [32]byte, r, slot uint32, keys []mix.LayerKey) {
					if r == 1 && fire(&fired) {
						keys[layer].MAC[0] ^= 1
						mu.Lock()
						badEpoch, badSlot = epoch, slot
						mu.Unlock()
					}
				}})
				recs := culpritRecords(t, bn.servers)
				named := sinceFault()
				mu.Lock()
				defer mu.Unlock()
				for i, r := range recs {
					if r.Role != "client" || r.Epoch != badEpoch || r.Slot != int(badSlot) {
						t.Fatalf("server %d named %s %d/slot %d in epoch %x; the culprit is the client in slot %d of %x (%s)",
							i, r.Role, r.Server, r.Slot, r.Epoch[:4], badSlot, badEpoch[:4], r.Reason)
					}
					// The walk reveals the accusation and one step per server
					// before the accuser: one position of one round.
					if want := 1 + layer; len(r.Evidence) != want {
						t.Fatalf("server %d kept %d pieces of evidence, want %d", i, len(r.Evidence), want)
					}
				}
				// Its primary (client i's is server i mod 3) refuses its peer in
				// the next epoch; no server is excluded anywhere.
				primary := bn.servers[1]
				primary.mu.Lock()
				_, refused := primary.strikes.Banned[bad.Inspect().PeerID()]
				primary.mu.Unlock()
				if !refused {
					t.Fatal("the culprit client's primary does not refuse it")
				}
				for _, s := range bn.servers {
					for _, o := range bn.servers {
						if s.rb.Has(o.h.ID()) {
							t.Fatal("an honest server was excluded")
						}
					}
				}
				shareAndGet(t, bn.clients[0], bn.clients[2])
				t.Logf("layer %d: every server named the culprit %v after the fault; an honest share and get done %v after it", layer, named, sinceFault())
			})
		})
	}
}

// serverCase runs a malicious server at chain position k of m = 3 (the
// honest ones accept a chain of 2, so the network forms again without it).
func serverCase(t *testing.T, k int, hooks func(fired *atomic.Bool) *serverHooks) {
	serverCaseEvidence(t, k, 0, hooks)
}

// serverCaseEvidence is serverCase where each honest record must hold
// wantEvidence signed messages (0: not checked).
func serverCaseEvidence(t *testing.T, k, wantEvidence int, hooks func(fired *atomic.Bool) *serverHooks) []store.BlameRecord {
	bn := startBlameNetFounded(t, testParams(6), 3, 2, 4, 2, true)
	var fired atomic.Bool
	bad := bn.servers[k]
	// The culprit misbehaves in the first epoch whose chain holds all
	// three: number 1 may form with two founders, whose hellos came first,
	// and in a chain of two a corrupt server is half of the group that
	// certifies the next number, outside the model (docs/protocol.md §3),
	// so the honest one could form no chain after the blame.
	if err := wait.Until(context.Background(), linkWait(t, 60*time.Second, 120), func() bool { return len(bad.OpenChain()) == 3 }); err != nil {
		t.Fatalf("server %d was in no epoch of all three servers (number %d)", k, bad.lastNumber())
	}
	bad.hooks.Store(hooks(&fired))
	var honest []*Server
	for j, s := range bn.servers {
		if j != k {
			honest = append(honest, s)
		}
	}
	recs := culpritRecords(t, honest)
	named := sinceFault()
	for i, r := range recs {
		// By peer id: an epoch whose chain formed before all three
		// servers knew each other would hold the culprit elsewhere.
		if r.Role != "server" || r.PeerID != bad.h.ID().String() {
			t.Fatalf("honest server %d named %s %d (slot %d): %s; the culprit is server %d", i, r.Role, r.Server, r.Slot, r.Reason, k)
		}
		if hooks := bad.hooks.Load(); hooks.accuse != nil && len(r.Evidence) != 1 {
			t.Fatalf("honest server %d kept %d pieces of evidence for a false accusation, want the accusation alone", i, len(r.Evidence))
		}
		// A corrupting server: the accusation of the next server and the
		// culprit's own step (a bad payload: the step alone); no honest
		// server before it reveals anything.
		if wantEvidence > 0 && len(r.Evidence) != wantEvidence {
			t.Fatalf("honest server %d kept %d pieces of evidence, want %d", i, len(r.Evidence), wantEvidence)
		}
	}
	for _, s := range honest {
		if !s.rb.Has(bad.h.ID()) {
			t.Fatal("the culprit server is not excluded")
		}
		for _, id := range s.chain() {
			if id == bad.h.ID() {
				t.Fatal("the culprit server is still in an honest server's chain")
			}
		}
	}
	// Clients keep their primary: two whose primary is honest share and get.
	var up, down *Client
	for i, c := range bn.clients {
		if i%3 != k {
			up, down = down, c
		}
	}
	shareAndGet(t, up, down)
	t.Logf("server %d: every honest server named it %v after the fault; an honest share and get done %v after it", k, named, sinceFault())
	return recs
}

// TestRoundBlameServerCorrupts: a server that alters one entry of its
// output is named by every honest server (a MAC failure at the next
// server, or a bad payload after the last), at each chain position.
func TestRoundBlameServerCorrupts(t *testing.T) {
	t.Parallel()
	positions := []int{0, 1, 2}
	if testing.Short() {
		positions = []int{1}
	}
	for _, k := range positions {
		t.Run(fmt.Sprintf("pos%d", k), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				serverCaseEvidence(t, k, map[int]int{0: 2, 1: 2, 2: 1}[k], func(fired *atomic.Bool) *serverHooks {
					return &serverHooks{corruptOut: func(r uint32, out [][]byte) {
						if r == 1 && fire(fired) {
							out[0][0] ^= 1
						}
					}}
				})
			})
		})
	}
}

// TestRoundBlameFalseAccusation: a server that accuses its predecessor's
// intact entry (or a client's intact onion, at S_0) is named by every
// honest server, at each chain position.
func TestRoundBlameFalseAccusation(t *testing.T) {
	t.Parallel()
	positions := []int{0, 1, 2}
	if testing.Short() {
		positions = []int{2}
	}
	for _, k := range positions {
		t.Run(fmt.Sprintf("pos%d", k), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				probed := make(chan error, 1)
				serverCase(t, k, func(fired *atomic.Bool) *serverHooks {
					return &serverHooks{accuse: func(r uint32) (int, bool) {
						return 0, r == 1 && fire(fired)
					}, probe: func(err error) { probed <- err }}
				})
				// The false accuser asked its predecessor for its step at
				// once: refused (it would reveal an honest position's shares).
				if k > 0 {
					if err := <-probed; err == nil {
						t.Fatal("a server revealed its walk step for a false accusation")
					}
				}
			})
		})
	}
}

// TestRoundBlameEquivocation: a server that signs two roots for one batch
// (its batch to the next server, another root announced to all) is named
// by every honest server from the two signed roots, at each position that
// announces roots (the last server's batch is the publication itself).
func TestRoundBlameEquivocation(t *testing.T) {
	t.Parallel()
	positions := []int{0, 1}
	if testing.Short() {
		positions = []int{0}
	}
	for _, k := range positions {
		t.Run(fmt.Sprintf("pos%d", k), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				serverCase(t, k, func(fired *atomic.Bool) *serverHooks {
					return &serverHooks{equivocate: func(r uint32) bool {
						return r == 1 && fire(fired)
					}}
				})
			})
		})
	}
}

// TestRoundBlameSecondOnion: a client that signs a second, different onion
// for one round is named by every server from its two signatures, even
// though every server refuses the first delivery of the evidence (a lost
// delivery: the sender retries until each acknowledges).
func TestRoundBlameSecondOnion(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		bn := startBlameNet(t, 3, 3, 4, 3)
		var refused atomic.Int32
		for _, s := range bn.servers {
			var once atomic.Bool
			s.hooks.Store(&serverHooks{refuseEvidence: func(typ wire.Type) bool {
				if typ != wire.TypeDoubleSubmit || !once.CompareAndSwap(false, true) {
					return false
				}
				refused.Add(1)
				return true
			}})
		}
		bad := bn.clients[1]
		var fired atomic.Bool
		var mu sync.Mutex
		var badEpoch [32]byte
		var badSlot uint32
		bad.Hooks.Store(&ClientHooks{SecondOnion: func(epoch [32]byte, r, slot uint32) bool {
			if r != 1 || !fire(&fired) {
				return false
			}
			mu.Lock()
			badEpoch, badSlot = epoch, slot
			mu.Unlock()
			return true
		}})
		recs := culpritRecords(t, bn.servers)
		named := sinceFault()
		mu.Lock()
		defer mu.Unlock()
		for i, r := range recs {
			if r.Role != "client" || r.Epoch != badEpoch || r.Slot != int(badSlot) || len(r.Evidence) != 1 {
				t.Fatalf("server %d named %s %d/slot %d (%d pieces of evidence); the culprit is the client in slot %d", i, r.Role, r.Server, r.Slot, len(r.Evidence), badSlot)
			}
		}
		if refused.Load() == 0 {
			t.Fatal("no delivery of the evidence was refused: the retry went untested")
		}
		shareAndGet(t, bn.clients[0], bn.clients[2])
		t.Logf("second onion: %d first deliveries refused; every server named the client %v after the fault; an honest share and get done %v after it", refused.Load(), named, sinceFault())
	})
}

// TestRoundBlameMissingEntry: a server that signs and sends a batch with
// one entry left out is named by every honest server from the signed batch
// itself, at each chain position.
func TestRoundBlameMissingEntry(t *testing.T) {
	t.Parallel()
	positions := []int{0, 1, 2}
	if testing.Short() {
		positions = []int{1}
	}
	for _, k := range positions {
		t.Run(fmt.Sprintf("pos%d", k), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				serverCase(t, k, func(fired *atomic.Bool) *serverHooks {
					return &serverHooks{dropOut: func(r uint32) bool { return r == 1 && fire(fired) }}
				})
			})
		})
	}
}
