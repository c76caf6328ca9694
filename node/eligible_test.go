package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
)

// serverIDs creates the identities of m servers in dir (nodetest's
// layout, <dir>/s<i>) and returns their peer ids, so that a test can pin
// servers before they start.
func serverIDs(t *testing.T, dir string, m int) []peer.ID {
	t.Helper()
	var ids []peer.ID
	for i := range m {
		priv, err := node.LoadIdentity(filepath.Join(dir, fmt.Sprintf("s%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestAllowServer: a server with --allow-server never joins a chain with
// a server it does not allow; it withdraws from such a chain and the
// leader forms the epoch without it. Four servers, server 0 allowing 1 and
// 2 only, four clients: no chain holds 0 and 3 together (before, any
// server that said hello joined every chain), and epochs run on through
// every server's turn (the rotation follows the group's rules, not one
// operator's pins). Server 0's pins do not shape the chains of its own
// turns either: server 3, of the last certificate and willing to serve,
// may not be left out (derive.go), so server 0 withdraws from every chain
// after the first while server 3 serves, and its turns cost T_lead (here 3 s, about an
// epoch).
func TestAllowServer(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		ids := serverIDs(t, dir, 4)
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 4, Clients: 4, MinServers: 3, MinClients: 2, Dir: dir, Params: node.TestParams(2), Server: func(i int, c *node.ServerConfig) {
			// No probation: server 0, left out of the first chains by its
			// pins, would otherwise be new to the others (TestProbation).
			c.Probation = -1
			c.LeaderTimeout = 3 * time.Second
			if i == 0 {
				c.AllowServers = []peer.ID{ids[1], ids[2]}
			}
		}})
		const epochs = 5
		end := time.Now().Add(40 * time.Second)
		with, without := 0, 0
		seen := map[uint64]bool{}
		last := func() uint64 {
			var n uint64
			for _, s := range tn.Servers {
				n = max(n, s.LastNumber())
			}
			return n
		}
		if err := wait.UntilEvery(context.Background(), time.Until(end), 10*time.Millisecond, func() bool {
			if last() >= epochs {
				return true
			}
			for _, s := range tn.Servers {
				c := s.OpenChain()
				if c == nil {
					continue
				}
				if slices.Contains(c, ids[0]) && slices.Contains(c, ids[3]) {
					t.Fatalf("server 0 serves in a chain with a server it does not allow: %v", c)
				}
				if n := s.LastNumber(); !seen[n] {
					seen[n] = true
					// Number 1 follows no certificate: its leader's
					// chain is unconstrained.
					if slices.Contains(c, ids[0]) && n > 1 {
						with++
					} else {
						without++
					}
				}
			}
			return false
		}); err != nil {
			t.Fatalf("epoch %d after 40 s, want %d", last(), epochs)
		}
		t.Logf("epochs seen open: %d with server 0, %d without; led %d %d %d %d", with, without, tn.Servers[0].Led(), tn.Servers[1].Led(), tn.Servers[2].Led(), tn.Servers[3].Led())
		if with != 0 || without == 0 {
			t.Fatal("server 0 should withdraw from every chain, its own turns' included, while server 3 serves")
		}
	})
}

// TestProbation: a peer id that no chain of the last 4·m_max epochs held
// serves P_prob epochs in the roster before it joins a chain. Three
// servers run epochs with two clients; a fourth, new server starts when
// their last number is n0: no chain holds it before epoch n0 + P_prob + 1
// (before, it joined the next epoch), and it does join one after.
func TestProbation(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		const prob = 2
		p := node.TestParams(2)
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, MinServers: 3, Params: p, Server: func(_ int, c *node.ServerConfig) { c.Probation = prob }})
		waitNumber(t, tn.Servers[0], 1, 30*time.Second)
		n0 := tn.Servers[0].LastNumber()
		var peers []string
		for i := range tn.Servers {
			peers = append(peers, tn.Addr(i))
		}
		ns, err := node.NewServer(context.Background(), node.ServerConfig{Network: node.VirtualNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: peers,
			NoLAN: true, MinServers: 3, MinClients: 2, Params: p, Probation: prob, Logger: nodetest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		if err := wait.Until(context.Background(), 60*time.Second, func() bool {
			for _, s := range tn.Servers {
				c := s.OpenChain()
				if !slices.Contains(c, ns.ID()) {
					continue
				}
				if n := s.LastNumber(); n < n0+prob+1 {
					t.Fatalf("the new server joined epoch %d, in the roster since epoch %d, probation %d", n, n0, prob)
				}
				t.Logf("new server joined epoch %d (in the roster from epoch %d)", s.LastNumber(), n0)
				return true
			}
			return false
		}); err != nil {
			t.Fatalf("the new server never joined a chain (last epoch %d, from %d)", tn.Servers[0].LastNumber(), n0)
		}
	})
}

// TestLateFounderServes: a founder that number 1's chain left out (it
// came up, or its hellos came, after the others had formed it) joins the
// chains once it holds the group's log, not after a probation counted from
// the others' first sighting of it. Four founders, three of them running
// number 1 with two clients; the fourth starts when their last number is
// n0 and joins a chain by n0 + 3 (a founder without records signs nothing
// until the log moves one number past what it caught up to). Before,
// every server put it on probation until n0 + 8 (P_prob = 8), as
// TestRoundBlameServerCorrupts found at 500 ms links.
func TestLateFounderServes(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		ids := serverIDs(t, dir, 4)
		p := node.TestParams(2)
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, MinServers: 3, MinClients: 2, Dir: dir, Params: p,
			Server: func(_ int, c *node.ServerConfig) { c.Founders = ids }})
		waitNumber(t, tn.Servers[0], 1, 30*time.Second)
		n0 := tn.Servers[0].LastNumber()
		var peers []string
		for i := range tn.Servers {
			peers = append(peers, tn.Addr(i))
		}
		late, err := node.NewServer(context.Background(), node.ServerConfig{Network: node.VirtualNet(t), DataDir: filepath.Join(dir, "s3"), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: peers,
			NoLAN: true, MinServers: 3, MinClients: 2, Params: p, Founders: ids, Logger: nodetest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		defer late.Close()
		const within = 3
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool {
			for _, s := range tn.Servers {
				if slices.Contains(s.OpenChain(), late.ID()) {
					t.Logf("the late founder joined epoch %d (started at %d)", s.LastNumber(), n0)
					if n := s.LastNumber(); n > n0+within {
						t.Fatalf("the late founder joined epoch %d, started at %d", n, n0)
					}
					return true
				}
			}
			if n := tn.Servers[0].LastNumber(); n > n0+within {
				t.Fatalf("epoch %d without the late founder, started at %d", n, n0)
			}
			return false
		}); err != nil {
			t.Fatalf("the late founder joined no chain (last epoch %d, from %d)", tn.Servers[0].LastNumber(), n0)
		}
	})
}

// waitNumber waits until s signed epoch number n.
func waitNumber(t *testing.T, s *node.Server, n uint64, within time.Duration) {
	t.Helper()
	if err := wait.Until(context.Background(), within, func() bool { return s.LastNumber() >= n }); err != nil {
		t.Fatalf("%s at epoch %d after %v, want %d", s.ID().ShortString(), s.LastNumber(), within, n)
	}
}
