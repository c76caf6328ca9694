package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
)

// Internal end-to-end helpers of the anonymity tests, which reach into
// servers' and clients' state (node/nodetest imports node, so an
// internal test cannot use it).

type anonNet struct {
	servers []*Server
	clients []*Client
}

// startAnonNet starts m servers on 127.0.0.1 (no mDNS) needing m servers
// and minClients clients, then n clients (client i with primary i mod m,
// MinAnonymity 1).
func startAnonNet(t testing.TB, m, n, minClients int, p Params, adjust func(i int, c *ServerConfig)) *anonNet {
	t.Helper()
	ctx := context.Background()
	tn := &anonNet{}
	var peers []string
	for i := 0; i < m; i++ {
		sc := ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: append([]string(nil), peers...),
			Nick: fmt.Sprintf("s%d", i), MinServers: m, MinClients: minClients, NoLAN: true, Params: p, Logger: anonLogger().With("self", fmt.Sprintf("s%d", i))}
		if adjust != nil {
			adjust(i, &sc)
		}
		s, err := NewServer(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		tn.servers = append(tn.servers, s)
		peers = append(peers, s.Addrs()[0].String())
	}
	for i := 0; i < n; i++ {
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: peers[i%m], Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		tn.clients = append(tn.clients, c)
	}
	return tn
}

func anonLogger() *slog.Logger {
	if os.Getenv("RIFFLE_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}

func anonRand(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// startPair starts two clients that join at once: up with primary 1 and
// down with primary 0, whose progress lines go to progress (nil: none).
// Both close when the test ends.
func (tn *anonNet) startPair(ctx context.Context, t testing.TB, progress io.Writer) (up, down *Client) {
	t.Helper()
	for i, c := range []**Client{&up, &down} {
		cfg := ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1-i].Addrs()[0].String(), Logger: anonLogger()}
		if i == 1 {
			cfg.Progress = progress
		}
		cl, err := NewClient(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		*c = cl
	}
	return up, down
}
