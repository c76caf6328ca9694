package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node"
)

// demoServers is the chain length of the demo and the benchmark: the
// smallest chain node accepts by default (SPEC §3), so the anonymity
// argument holds with one honest server among three.
const demoServers = 3

// demoNetConfig describes a loopback network run inside this process.
type demoNetConfig struct {
	Dir     string      // data directories of the servers go under it
	Clients int         // cover clients, all in the anonymity set
	Params  wire.Params // the leader's epoch parameters
	Logger  *slog.Logger
	// Progress, if set, receives the progress lines of the first
	// ProgressClients clients.
	Progress        io.Writer
	ProgressClients int
}

// demoNet is 3 servers and a crowd of clients on 127.0.0.1.
type demoNet struct {
	servers []*node.Server
	clients []*node.Client
}

// startDemoNet starts the servers one after the other (each bootstraps
// from those before it), then the clients, spread over the servers as
// primaries. Every epoch waits for all clients: MinClients is the crowd.
func startDemoNet(ctx context.Context, cfg demoNetConfig) (*demoNet, error) {
	if cfg.Clients < node.DefaultMinClients {
		return nil, fmt.Errorf("a network needs at least %d clients, got %d", node.DefaultMinClients, cfg.Clients)
	}
	p := cfg.Params
	if p.MaxClients < uint32(cfg.Clients) {
		p.MaxClients = uint32(cfg.Clients)
	}
	dn := &demoNet{}
	var peers []string
	for i := 0; i < demoServers; i++ {
		s, err := node.NewServer(ctx, node.ServerConfig{
			DataDir: filepath.Join(cfg.Dir, fmt.Sprintf("server%d", i)), Listen: []string{"/ip4/127.0.0.1/tcp/0"},
			Peers: append([]string(nil), peers...), Nick: fmt.Sprintf("demo%d", i),
			MinServers: demoServers, MinClients: cfg.Clients, NoLAN: true, Params: p, Logger: cfg.Logger,
		})
		if err != nil {
			dn.Close()
			return nil, fmt.Errorf("start server %d: %w", i, err)
		}
		dn.servers = append(dn.servers, s)
		peers = append(peers, s.Addrs()[0].String())
	}
	// Clients join in parallel: on a loaded machine, 200 sequential
	// libp2p handshakes take longer than a registration window.
	dn.clients = make([]*node.Client, cfg.Clients)
	errs := make([]error, cfg.Clients)
	var wg sync.WaitGroup
	for i := range dn.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var prog io.Writer
			if i < cfg.ProgressClients {
				prog = cfg.Progress
			}
			dn.clients[i], errs[i] = node.NewClient(ctx, node.ClientConfig{
				Server: peers[i%demoServers], Logger: cfg.Logger, Progress: prog,
				// The demo counts what it runs: the clients of one primary.
				MinAnonymity: max(1, cfg.Clients/demoServers),
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		dn.Close()
		return nil, fmt.Errorf("start clients: %w", err)
	}
	return dn, nil
}

// primaryAddr is the full address of server i, for RIFFLE_SERVER.
func (dn *demoNet) primaryAddr(i int) string { return dn.servers[i].Addrs()[0].String() }

// Close stops the clients (in parallel: each leaves its epoch), then the
// servers.
func (dn *demoNet) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(dn.clients)+len(dn.servers))
	for i, c := range dn.clients {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.Close() }()
	}
	wg.Wait()
	for i, s := range dn.servers {
		errs[len(dn.clients)+i] = s.Close()
	}
	dn.clients, dn.servers = nil, nil
	return errors.Join(errs...)
}

// epochRecorder passes progress lines through to w and remembers the id
// of the last epoch joined (node prints "epoch <8 hex digits>: ...").
type epochRecorder struct {
	w io.Writer

	mu    sync.Mutex
	epoch string
}

func (r *epochRecorder) Write(p []byte) (int, error) {
	for _, l := range strings.Split(string(p), "\n") {
		if rest, ok := strings.CutPrefix(l, "epoch "); ok {
			if id, _, ok := strings.Cut(rest, ":"); ok {
				r.mu.Lock()
				seen := r.epoch == id
				r.epoch = id
				r.mu.Unlock()
				if seen && strings.Count(string(p), "\n") <= 1 {
					// Both acting clients announce each epoch: once
					// is enough.
					return len(p), nil
				}
			}
		}
	}
	if r.w == nil {
		return len(p), nil
	}
	return r.w.Write(p)
}

// lastEpoch returns the last epoch id seen, "?" if none.
func (r *epochRecorder) lastEpoch() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.epoch == "" {
		return "?"
	}
	return r.epoch
}

// executable is the path by which a user can run this binary again, for
// the commands the demo prints.
func executable() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "riffle"
}
