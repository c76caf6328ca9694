package node

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

	"github.com/riffle-net/riffle/internal/wire"
)

// crashNet is a loopback network whose servers a test can kill abruptly
// and restart on the same data directory and address.
type crashNet struct {
	t       *testing.T
	cfgs    []ServerConfig
	servers []*Server // nil while killed
	clients []*Client // client i's primary is server i
	chain   []int     // server indices in chain order
}

// crashParams are fast epochs: short rounds and a round limit of 2 s, so
// that a fault costs seconds.
func crashParams() wire.Params {
	p := testParams(24)
	p.RoundLimitMs = 2000
	p.RegWindowMs = 300
	return p
}

func startCrashNet(t *testing.T, m int) *crashNet {
	t.Helper()
	cn := &crashNet{t: t}
	var addrs []string
	for i := 0; i < m; i++ {
		cfg := ServerConfig{DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Nick: fmt.Sprintf("s%d", i),
			MinServers: m - 1, MinClients: 2, NoLAN: true, Params: crashParams(), Logger: testLogger(t)}
		cfg.Peers = append([]string(nil), addrs...)
		s, err := NewServer(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Restarts listen where the server listened and know every other.
		cfg.Listen = []string{s.Addrs()[0].Decapsulate(mustP2P(t, s)).String()}
		cn.cfgs = append(cn.cfgs, cfg)
		cn.servers = append(cn.servers, s)
		addrs = append(addrs, s.Addrs()[0].String())
	}
	for i := range cn.cfgs {
		cn.cfgs[i].Peers = nil
		for j, a := range addrs {
			if j != i {
				cn.cfgs[i].Peers = append(cn.cfgs[i].Peers, a)
			}
		}
	}
	t.Cleanup(func() {
		for _, c := range cn.clients {
			c.Close()
		}
		for _, s := range cn.servers {
			if s != nil {
				s.Close()
			}
		}
	})
	for i := 0; i < m; i++ {
		c, err := NewClient(context.Background(), ClientConfig{Server: addrs[i], Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		cn.clients = append(cn.clients, c)
	}
	cn.chain = make([]int, m)
	for i := range cn.chain {
		cn.chain[i] = i
	}
	sort.Slice(cn.chain, func(a, b int) bool {
		return bytes.Compare([]byte(cn.servers[cn.chain[a]].ID()), []byte(cn.servers[cn.chain[b]].ID())) < 0
	})
	return cn
}

// kill stops server i abruptly: its host goes first, so that no goodbye,
// abort or reply leaves it, then its goroutines and store.
func (cn *crashNet) kill(i int) {
	s := cn.servers[i]
	s.h.Close()
	s.Close()
	cn.servers[i] = nil
}

// restart starts server i again on its data directory and address.
func (cn *crashNet) restart(i int) {
	var err error
	for try := 0; try < 20; try++ {
		if cn.servers[i], err = NewServer(context.Background(), cn.cfgs[i]); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the port is being released
	}
	cn.t.Fatalf("restart server %d: %v", i, err)
}

// phase waits until server i is in the given phase of an epoch:
// "registration" (an epoch open for registration) or "round" (an epoch
// whose setup is done and whose first request list is final).
func (cn *crashNet) phase(i int, phase string, d time.Duration) {
	cn.t.Helper()
	s := cn.servers[i]
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		ok := false
		switch phase {
		case "registration":
			ok = s.open != nil && !s.open.regClosed
		case "round":
			for _, e := range s.epochs {
				ok = ok || (!e.ended && e.setupDone && e.listHigh >= 1)
			}
		}
		s.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	cn.t.Fatalf("server %d not in phase %s within %v", i, phase, d)
}

// TestCrash kills one server of each role (leader, middle, last of the
// chain, and the primary of the client that fetches) during registration
// and mid-round, with and without a restart on the same data directory
// and address. The network must run again within a bounded time and a
// share completed before the kill must be fetchable after, byte-exact.
// The whole matrix runs with RIFFLE_LONG=1; otherwise a representative
// subset (the leader restarted mid-round, the last server gone for good
// during registration).
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs loopback networks")
	}
	type tc struct {
		role, phase string
		restart     bool
		lost        bool // the restarted server lost its epoch number file
	}
	var cases []tc
	for _, role := range []string{"leader", "middle", "last", "primary"} {
		for _, ph := range []string{"registration", "round"} {
			for _, rs := range []bool{true, false} {
				cases = append(cases, tc{role, ph, rs, false})
			}
		}
	}
	if os.Getenv("RIFFLE_LONG") == "" {
		cases = []tc{{"leader", "round", true, false}, {"last", "registration", false, false}}
	}
	// A leader that lost its record catches up from the others' refusals.
	cases = append(cases, tc{"leader", "round", true, true})
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/restart=%v", c.role, c.phase, c.restart)
		if c.lost {
			name += "/number-lost"
		}
		t.Run(name, func(t *testing.T) { crashCase(t, c.role, c.phase, c.restart, c.lost) })
	}
}

// recoverWithin bounds how long the network may take to serve a get after
// a crash: the dead server's departure, an epoch or two ended by it, and a
// new epoch's registration and setup.
const recoverWithin = 45 * time.Second

func crashCase(t *testing.T, role, phase string, restart, lost bool) {
	cn := startCrashNet(t, 4)
	var victim int
	switch role {
	case "leader":
		victim = cn.chain[0]
	case "middle":
		victim = cn.chain[1]
	case "last":
		victim = cn.chain[len(cn.chain)-1]
	case "primary":
		victim = cn.chain[2]
	}
	// The uploader's primary is never the victim; the downloader's is the
	// victim for "primary" with a restart (its client must come back
	// through it), else another live server.
	up := (victim + 1) % 4
	down := (victim + 2) % 4
	if role == "primary" && restart {
		down = victim
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data := randBytes(t, 40<<10)
	link, err := cn.clients[up].Share(ctx, bytes.NewReader(data), "crash.bin", false)
	if err != nil {
		t.Fatalf("share before the crash: %v", err)
	}
	watch := (victim + 3) % 4
	cn.phase(watch, phase, 30*time.Second)
	cn.kill(victim)
	killed := time.Now()
	if restart {
		time.Sleep(200 * time.Millisecond)
		if lost {
			if err := os.Remove(filepath.Join(cn.cfgs[victim].DataDir, EpochNumberFile)); err != nil {
				t.Fatal(err)
			}
		}
		cn.restart(victim)
	}
	gctx, gcancel := context.WithTimeout(ctx, recoverWithin)
	defer gcancel()
	path, err := cn.clients[down].Get(gctx, link, t.TempDir())
	if err != nil {
		t.Fatalf("get after killing the %s (%s, restart %v): %v after %v", role, phase, restart, err, time.Since(killed).Round(time.Millisecond))
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched bytes differ (%v)", err)
	}
	t.Logf("%s killed in %s (restart %v): fetched %d bytes %v after the kill", role, phase, restart, len(data), time.Since(killed).Round(time.Millisecond))
}

func mustP2P(t *testing.T, s *Server) ma.Multiaddr {
	c, err := ma.NewComponent("p2p", s.ID().String())
	if err != nil {
		t.Fatal(err)
	}
	return c.Multiaddr()
}
