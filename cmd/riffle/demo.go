package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

func init() {
	register(&cli.Command{
		Name:  "demo",
		Usage: "run 3 servers and a crowd of clients on loopback, share a file and fetch it",
		Description: `Starts three servers and --clients cover clients on 127.0.0.1 in this process,
shares a random sample file from one client, fetches it from another, checks the
bytes and prints what happened. With --keep the network stays up and the command
prints how to use it from another terminal.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "clients", Value: 16, Usage: "clients in the crowd (the anonymity set)"},
			&cli.IntFlag{Name: "size", Value: 1 << 20, Usage: "bytes of the sample file"},
			&cli.IntFlag{Name: "chunk-size", Value: 64 << 10, Usage: "epoch parameter b for the demo"},
			&cli.IntFlag{Name: "rounds", Value: 64, Usage: "rounds per epoch"},
			&cli.BoolFlag{Name: "keep", Usage: "leave the network running until SIGINT"},
			verboseFlag(),
		},
		Action: runDemo,
	})
}

func runDemo(c *cli.Context) error {
	n := c.Int("clients")
	if n < 2 {
		return fmt.Errorf("demo needs at least 2 clients, got %d", n)
	}
	params, err := paramsWith(node.DefaultParams(), c.Int("chunk-size"), c.Int("rounds"), 0, 500*time.Millisecond, 30*time.Second)
	if err != nil {
		return err
	}
	if params.MaxClients < uint32(n) {
		params.MaxClients = uint32(n)
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	out, errw := stdout(c), stderr(c)
	base, err := os.MkdirTemp("", "riffle-demo-")
	if err != nil {
		return fmt.Errorf("demo directory: %w", err)
	}
	if !c.Bool("keep") {
		defer os.RemoveAll(base)
	}
	var servers []*node.Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	var peers []string
	for i := 0; i < 3; i++ {
		s, err := node.NewServer(ctx, node.ServerConfig{
			DataDir: filepath.Join(base, fmt.Sprintf("server%d", i)), Listen: []string{"/ip4/127.0.0.1/tcp/0"},
			Peers: peers, Nick: fmt.Sprintf("demo%d", i), MinServers: 3, MinClients: n, NoLAN: true,
			Params: params, Logger: logger(c),
		})
		if err != nil {
			return err
		}
		servers = append(servers, s)
		peers = append(peers, s.Addrs()[0].String())
		fmt.Fprintf(out, "server %d: %s\n", i, s.Addrs()[0])
	}
	clients := make([]*node.Client, n)
	defer func() {
		for _, cl := range clients {
			if cl != nil {
				cl.Close()
			}
		}
	}()
	for i := range clients {
		var prog io.Writer
		if i < 2 {
			prog = errw
		}
		cl, err := node.NewClient(ctx, node.ClientConfig{Server: servers[i%3].Addrs()[0].String(), Logger: logger(c), Progress: prog})
		if err != nil {
			return err
		}
		clients[i] = cl
	}
	fmt.Fprintf(out, "%d clients joined (anonymity set %d); sharing a %d-byte sample file from client 0\n", n, n, c.Int("size"))
	sample := make([]byte, c.Int("size"))
	if _, err := io.ReadFull(rand.Reader, sample); err != nil {
		return err
	}
	start := time.Now()
	link, err := clients[0].Share(ctx, bytes.NewReader(sample), "sample.bin", false)
	if err != nil {
		return fmt.Errorf("demo share: %w", err)
	}
	shared := time.Since(start)
	fmt.Fprintf(out, "shared in %s: %s\n", shared.Round(time.Millisecond), link)
	dl := filepath.Join(base, "download")
	if err := os.MkdirAll(dl, 0o700); err != nil {
		return err
	}
	start = time.Now()
	path, err := clients[1].Get(ctx, link, dl)
	if err != nil {
		return fmt.Errorf("demo get: %w", err)
	}
	fetched := time.Since(start)
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, sample) {
		return fmt.Errorf("demo: fetched %d bytes differ from the %d shared", len(got), len(sample))
	}
	st := clients[1].Stats()
	fmt.Fprintf(out, "fetched by client 1 in %s, bytes identical\n", fetched.Round(time.Millisecond))
	fmt.Fprintf(out, "anonymity set %d, epochs %d, rounds %d, upload goodput %.1f KiB/s, download goodput %.1f KiB/s\n",
		clients[1].AnonymitySet(), st.Epochs, st.Rounds, float64(len(sample))/1024/shared.Seconds(), float64(len(sample))/1024/fetched.Seconds())
	if !c.Bool("keep") {
		fmt.Fprintln(out, "demo done; stopping")
		var wg sync.WaitGroup
		for _, cl := range clients {
			wg.Add(1)
			go func() { defer wg.Done(); cl.Close() }()
		}
		wg.Wait()
		clients = make([]*node.Client, n)
		return nil
	}
	fmt.Fprintf(out, "\nthe network keeps running (data in %s); from another terminal:\n", base)
	fmt.Fprintf(out, "  export RIFFLE_SERVER=%s\n  riffle ls\n  riffle get %s\n  riffle share FILE\n", servers[0].Addrs()[0], link)
	fmt.Fprintln(out, "stop with Ctrl-C")
	<-ctx.Done()
	return nil
}

var _ = context.Background
