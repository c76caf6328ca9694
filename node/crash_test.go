package node_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
)

// crashNet is a harness network whose servers a test kills abruptly and
// restarts on the same data directory and address.
type crashNet struct {
	t     *testing.T
	net   *nodetest.Net
	cfgs  []node.ServerConfig
	chain []int // server indices in chain order
}

// crashParams are fast epochs: a round limit of 3 s, so that a fault
// costs seconds.
func crashParams() node.Params {
	p := node.TestParams(24)
	p.RoundLimitMs = 3000
	return p
}

// startCrashNet starts m servers (an epoch needs m−1) and one client per
// server, client i with primary server i.
func startCrashNet(t *testing.T, m int) *crashNet {
	t.Helper()
	return startCrashNetWith(t, m, crashParams(), nil)
}

// startCrashNetWith is startCrashNet with the epoch parameters p, and
// adjust (if set) applied to every server's configuration.
func startCrashNetWith(t *testing.T, m int, p node.Params, adjust func(c *node.ServerConfig)) *crashNet {
	t.Helper()
	cn := &crashNet{t: t, cfgs: make([]node.ServerConfig, m)}
	cn.net = nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: m, Clients: m, Params: p, MinServers: m - 1, MinClients: 2,
		Server: func(i int, c *node.ServerConfig) {
			if adjust != nil {
				adjust(c)
			}
			cn.cfgs[i] = *c
		}})
	var addrs []string
	for i, s := range cn.net.Servers {
		p2p, err := ma.NewComponent("p2p", s.ID().String())
		if err != nil {
			t.Fatal(err)
		}
		// A restart listens where the server listened.
		cn.cfgs[i].Listen = []string{s.Addrs()[0].Decapsulate(p2p.Multiaddr()).String()}
		addrs = append(addrs, cn.net.Addr(i))
	}
	for i := range cn.cfgs {
		cn.cfgs[i].Peers = nil
		for j, a := range addrs {
			if j != i {
				cn.cfgs[i].Peers = append(cn.cfgs[i].Peers, a)
			}
		}
	}
	cn.chain = make([]int, m)
	for i := range cn.chain {
		cn.chain[i] = i
	}
	sort.Slice(cn.chain, func(a, b int) bool {
		return bytes.Compare([]byte(cn.net.Servers[cn.chain[a]].ID()), []byte(cn.net.Servers[cn.chain[b]].ID())) < 0
	})
	return cn
}

// restart starts server i again on its data directory and address.
func (cn *crashNet) restart(i int) {
	var err error
	// Two seconds for the port to be released.
	if wait.UntilEvery(context.Background(), 2*time.Second, 100*time.Millisecond, func() bool {
		var s *node.Server
		if s, err = node.NewServer(context.Background(), cn.cfgs[i]); err == nil {
			cn.net.Servers[i] = s
		}
		return err == nil
	}) != nil {
		cn.t.Fatalf("restart server %d: %v", i, err)
	}
}

// phase waits until server i is in phase (node.Server.InPhase).
func (cn *crashNet) phase(i int, phase string, d time.Duration) {
	cn.t.Helper()
	if err := wait.UntilEvery(context.Background(), d, 10*time.Millisecond, func() bool { return cn.net.Servers[i].InPhase(phase) }); err != nil {
		cn.t.Fatalf("server %d not in phase %s within %v", i, phase, d)
	}
}

// TestCrash kills one server of each role (leader, middle, last of the
// chain, and the primary of the client that fetches) during registration,
// setup or mid-round, with and without a restart on the same data directory
// and address. The network must run again within a bounded time and a
// share completed before the kill must be fetchable after, byte-exact.
// The whole matrix runs with RIFFLE_LONG=1; otherwise a representative
// subset (docs/proto-node.md "Hostile peers and crashes").
func TestCrash(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs loopback networks")
	}
	type tc struct {
		role, phase string
		restart     bool
		lost        bool // the restarted server lost its epoch number and certificates
	}
	var cases []tc
	for _, role := range []string{"leader", "middle", "last", "primary"} {
		for _, ph := range []string{"registration", "setup", "round"} {
			for _, rs := range []bool{true, false} {
				cases = append(cases, tc{role, ph, rs, false})
			}
		}
	}
	if os.Getenv("RIFFLE_LONG") == "" {
		cases = []tc{{"leader", "round", true, false}, {"last", "registration", false, false}}
	}
	// A leader that lost its record catches up from the others'
	// certificates (certs.go).
	cases = append(cases, tc{"leader", "round", true, true})
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/restart=%v", c.role, c.phase, c.restart)
		if c.lost {
			name += "/number-lost"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			node.Virtual(t, func(t *testing.T) { crashCase(t, c.role, c.phase, c.restart, c.lost) })
		})
	}
}

// recoverWithin bounds how long the network may take to serve a get after
// a crash: the dead server's departure, an epoch or two ended by it, and a
// new epoch's registration and setup.
const recoverWithin = 45 * time.Second

func crashCase(t *testing.T, role, phase string, restart, lost bool) {
	const m = 4
	cn := startCrashNet(t, m)
	var victim int
	switch role {
	case "leader":
		victim = cn.chain[0]
	case "middle":
		victim = cn.chain[1]
	case "last":
		victim = cn.chain[m-1]
	case "primary":
		victim = cn.chain[2]
	}
	// The uploader's primary is never the victim; the downloader's is the
	// victim for "primary" with a restart (its client must come back
	// through it), else another live server.
	up, down := (victim+1)%m, (victim+2)%m
	if role == "primary" && restart {
		down = victim
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data := nodetest.RandBytes(t, 40<<10)
	link, err := cn.net.Clients[up].Share(ctx, bytes.NewReader(data), "crash.bin", false)
	if err != nil {
		t.Fatalf("share before the crash: %v", err)
	}
	cn.phase((victim+3)%m, phase, 60*time.Second)
	cn.net.Servers[victim].Crash()
	killed := time.Now()
	var certified uint64 // the others' highest certified number at the restart
	if restart {
		time.Sleep(200 * time.Millisecond)
		if lost {
			if err := os.Remove(filepath.Join(cn.cfgs[victim].DataDir, node.EpochNumberFile)); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(cn.cfgs[victim].DataDir, node.CertDir)); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range cn.net.Servers {
			if i != victim {
				certified = max(certified, s.CertTop())
			}
		}
		cn.restart(victim)
	}
	gctx, gcancel := context.WithTimeout(ctx, recoverWithin)
	defer gcancel()
	path, err := cn.net.Clients[down].Get(gctx, link, t.TempDir())
	if err != nil {
		t.Fatalf("get after killing the %s (%s, restart %v): %v after %v", role, phase, restart, err, time.Since(killed).Round(time.Millisecond))
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched bytes differ (%v)", err)
	}
	t.Logf("%s killed in %s (restart %v): fetched %d bytes %v after the kill", role, phase, restart, len(data), time.Since(killed).Round(time.Millisecond))
	if restart {
		// The restarted server holds the certificates of the numbers
		// the others had certified, its last number past them.
		v := cn.net.Servers[victim]
		if err := wait.Until(ctx, 20*time.Second, func() bool { return v.CertTop() >= certified && v.LastNumber() >= certified }); err != nil {
			t.Fatalf("restarted %s certified up to %d (number %d), the others %d: %v", role, v.CertTop(), v.LastNumber(), certified, err)
		}
	}
}
