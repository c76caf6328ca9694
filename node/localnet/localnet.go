// Package localnet starts a riffle network inside one process on
// 127.0.0.1: m servers, each bootstrapping from those before it, with no
// LAN discovery, and n clients spread over them as primaries. `riffle
// demo`, `riffle bench` (Bench, Baseline) and, through node/nodetest,
// node's end-to-end tests run on it. It must not import testing: the
// riffle binary links it (TestBinaryDeps in cmd/riffle).
package localnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/transport"
)

// DefaultServers is the chain length when Config.Servers is zero: the
// smallest chain node accepts by default (docs/protocol.md §3).
const DefaultServers = node.DefaultMinServers

// loopback is where every host of a harness network listens: a fresh port
// on 127.0.0.1.
const loopback = "/ip4/127.0.0.1/tcp/0"

// loopbackQUIC is loopback over QUIC (BenchConfig.QUIC).
const loopbackQUIC = "/ip4/127.0.0.1/udp/0/quic-v1"

// Config describes a network. Zero fields take the defaults given.
type Config struct {
	Servers int // m (default DefaultServers)
	Clients int // n, started in parallel, client i with primary i mod m
	// Params are the leader's epoch parameters (zero: node's defaults).
	Params node.Params
	// MinServers and MinClients are every server's minimums for an epoch
	// (default: all m servers, all n clients).
	MinServers, MinClients int
	// Dir holds the servers' data directories (<Dir>/s<i>); empty: a
	// temporary directory that Close removes.
	Dir string
	// Nick prefixes the servers' nicks (<Nick><i>; default "s").
	Nick   string
	Logger *slog.Logger
	// Server and Client, if set, adjust server i's or client i's
	// configuration before it starts (Peers holds the addresses of the
	// servers before i, Server the primary's address). Client is called
	// from the clients' goroutines at once.
	Server func(i int, c *node.ServerConfig)
	Client func(i int, c *client.ClientConfig)
	// Network carries every host's streams (nil: libp2p on loopback).
	// With a memnet.Net inside a testing/synctest bubble the network runs
	// in virtual time (Virtual).
	Network transport.Network
}

// Net is a running network.
type Net struct {
	Servers []*node.Server
	Clients []*client.Client
	// Network is the network of cfg (nil: libp2p).
	Network transport.Network
	tmp     string // removed by Close
}

// Start starts cfg's servers one after the other, then its clients in
// parallel (on a loaded machine, hundreds of sequential libp2p handshakes
// take longer than a registration window). On error, what was started is
// closed.
func Start(ctx context.Context, cfg Config) (*Net, error) {
	m := cfg.Servers
	if m <= 0 {
		m = DefaultServers
	}
	if cfg.MinServers == 0 {
		cfg.MinServers = m
	}
	if cfg.MinClients == 0 {
		cfg.MinClients = cfg.Clients
	}
	if cfg.Nick == "" {
		cfg.Nick = "s"
	}
	n := &Net{Network: cfg.Network}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "riffle-net-")
		if err != nil {
			return nil, fmt.Errorf("localnet: data directory: %w", err)
		}
		dir, n.tmp = d, d
	}
	// The m servers found the group (node.ServerConfig.Founders): their
	// identities are made first, each in its data directory.
	var founders []peer.ID
	for i := 0; i < m; i++ {
		priv, err := node.LoadIdentity(filepath.Join(dir, fmt.Sprintf("s%d", i)))
		if err == nil {
			var id peer.ID
			id, err = peer.IDFromPrivateKey(priv)
			founders = append(founders, id)
		}
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("localnet: identity of server %d: %w", i, err)
		}
	}
	var peers []string
	for i := 0; i < m; i++ {
		sc := node.ServerConfig{DataDir: filepath.Join(dir, fmt.Sprintf("s%d", i)), Listen: []string{loopback},
			Peers: append([]string(nil), peers...), Nick: fmt.Sprintf("%s%d", cfg.Nick, i),
			MinServers: cfg.MinServers, MinClients: cfg.MinClients, NoLAN: true, Params: cfg.Params, Logger: cfg.Logger, Network: cfg.Network,
			Founders: append([]peer.ID(nil), founders...)}
		if sc.Logger != nil {
			// Several servers share the log: each line says whose.
			sc.Logger = sc.Logger.With("self", sc.Nick)
		}
		if cfg.Server != nil {
			cfg.Server(i, &sc)
		}
		s, err := node.NewServer(ctx, sc)
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("localnet: start server %d: %w", i, err)
		}
		n.Servers = append(n.Servers, s)
		peers = append(peers, n.Addr(i))
	}
	n.Clients = make([]*client.Client, cfg.Clients)
	errs := make([]error, cfg.Clients)
	var wg sync.WaitGroup
	for i := range n.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A harness network is small and quick: its clients take
			// part whatever the set (MinAnonymity 1) and start jobs at
			// once (Now); tests of either set their own.
			cc := client.ClientConfig{Server: peers[i%m], Logger: cfg.Logger, MinAnonymity: 1, Now: true, Network: cfg.Network}
			if cfg.Client != nil {
				cfg.Client(i, &cc)
			}
			n.Clients[i], errs[i] = client.NewClient(ctx, cc)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		n.Close()
		return nil, fmt.Errorf("localnet: start clients: %w", err)
	}
	return n, nil
}

// Addr is the full address (with /p2p/) of server i.
func (n *Net) Addr(i int) string { return n.Servers[i].Addrs()[0].String() }

// NewClient starts one more client with primary server i; cfg.Server is
// set to it. The caller closes the client (Close does not).
func (n *Net) NewClient(ctx context.Context, primary int, cfg client.ClientConfig) (*client.Client, error) {
	cfg.Server = n.Addr(primary)
	if cfg.Network == nil {
		cfg.Network = n.Network
	}
	if cfg.MinAnonymity == 0 {
		cfg.MinAnonymity = 1 // as Start's clients
	}
	cfg.Now = true // as Start's clients; presence tests use client.NewClient
	return client.NewClient(ctx, cfg)
}

// Close stops the clients (in parallel: each leaves its epoch), then the
// servers, and removes a temporary data directory.
func (n *Net) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(n.Clients)+len(n.Servers)+1)
	for i, c := range n.Clients {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.Close() }()
	}
	wg.Wait()
	for i, s := range n.Servers {
		errs[len(n.Clients)+i] = s.Close()
	}
	n.Clients, n.Servers = nil, nil
	if n.tmp != "" {
		errs[len(errs)-1] = os.RemoveAll(n.tmp)
		n.tmp = ""
	}
	return errors.Join(errs...)
}

// Logger is the logger of tests: quiet, unless RIFFLE_DEBUG is set ("info"
// for info level, anything else for debug), then to stderr.
func Logger() *slog.Logger {
	switch os.Getenv("RIFFLE_DEBUG") {
	case "":
		return nil
	case "info":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	default:
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}
