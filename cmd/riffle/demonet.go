package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/localnet"
)

// demoServers is the chain length of the demo and the benchmark: the
// smallest chain node accepts by default (docs/protocol.md §3), so the
// anonymity argument holds with one honest server among three.
const demoServers = localnet.DefaultServers

// demoNetConfig describes a loopback network run inside this process.
type demoNetConfig struct {
	Dir     string      // data directories of the servers go under it
	Clients int         // cover clients, all in the anonymity set
	Params  node.Params // the leader's epoch parameters
	Logger  *slog.Logger
	// Progress, if set, receives the progress lines of the first
	// ProgressClients clients.
	Progress        io.Writer
	ProgressClients int
}

// demoNet is 3 servers and a crowd of clients on 127.0.0.1.
type demoNet struct {
	net     *localnet.Net
	servers []*node.Server
	clients []*client.Client
}

// startDemoNet starts the network of node/localnet: the servers one
// after the other (each bootstraps from those before it), then the clients
// in parallel, spread over the servers as primaries. Every epoch waits for
// all clients: MinClients is the crowd.
func startDemoNet(ctx context.Context, cfg demoNetConfig) (*demoNet, error) {
	if cfg.Clients < node.DefaultMinClients {
		return nil, fmt.Errorf("a network needs at least %d clients, got %d", node.DefaultMinClients, cfg.Clients)
	}
	p := cfg.Params
	if p.MaxClients < uint32(cfg.Clients) {
		p.MaxClients = uint32(cfg.Clients)
	}
	net, err := localnet.Start(ctx, localnet.Config{
		Servers: demoServers, Clients: cfg.Clients, Params: p, Dir: cfg.Dir, Nick: "demo", Logger: cfg.Logger,
		Client: func(i int, c *client.ClientConfig) {
			if i < cfg.ProgressClients {
				c.Progress = cfg.Progress
			}
			// The demo counts what it runs: the clients of one primary.
			c.MinAnonymity = max(1, cfg.Clients/demoServers)
			// and runs its jobs at once.
			c.Now = true
		},
	})
	if err != nil {
		return nil, err
	}
	return &demoNet{net: net, servers: net.Servers, clients: net.Clients}, nil
}

// primaryAddr is the full address of server i, for RIFFLE_SERVER.
func (dn *demoNet) primaryAddr(i int) string { return dn.net.Addr(i) }

// Close stops the clients (in parallel: each leaves its epoch), then the
// servers.
func (dn *demoNet) Close() error {
	if dn.net == nil {
		return nil
	}
	err := dn.net.Close()
	dn.net, dn.clients, dn.servers = nil, nil, nil
	return err
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
