package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// dupReader is crypto/rand except for the third 64-byte read, which is a
// fixed pattern: in mix.Register that is the scalar u_{i,1} (reads of 64
// bytes alternate u_{i,j} and r_{i,j}; keys and nonces read 32). Two
// clients with such readers register the same U for server 1 under
// different ciphertexts, which no registration check can see.
type dupReader struct {
	mu    sync.Mutex
	reads int
}

func (d *dupReader) Read(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(p) == 64 {
		d.reads++
		if d.reads == 3 {
			for i := range p {
				p[i] = byte(i*7 + 1)
			}
			return len(p), nil
		}
	}
	return io.ReadFull(rand.Reader, p)
}

// TestShareFaultExcludesCulprit: a duplicate U at server 1 (§4.2 step 3)
// aborts setup; the servers walk the position back through S_0's route
// proof (§8 step 1) and the culprit's primary refuses its peer in the next
// epoch.
func TestShareFaultExcludesCulprit(t *testing.T) {
	ctx := context.Background()
	p := testParams(8)
	var servers []*Server
	var peers []string
	for i := 0; i < 3; i++ {
		s, err := NewServer(ctx, ServerConfig{DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: peers,
			Nick: fmt.Sprintf("s%d", i), MinServers: 3, MinClients: 4, NoLAN: true, Params: p, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		servers = append(servers, s)
		peers = append(peers, s.Addrs()[0].String())
	}
	bad := map[peer.ID]bool{}
	for i := 0; i < 4; i++ {
		cfg := ClientConfig{Server: servers[i%3].Addrs()[0].String(), Logger: testLogger(t)}
		if i == 1 || i == 2 {
			cfg.Rand = &dupReader{}
		}
		c, err := NewClient(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if cfg.Rand != nil {
			bad[c.h.ID()] = true
		}
	}
	deadline := time.Now().Add(40 * time.Second)
	walked := map[int]bool{} // servers seen ending an epoch on the walk
	for time.Now().Before(deadline) {
		var banned []peer.ID
		for i, s := range servers {
			s.mu.Lock()
			for p := range s.banned {
				banned = append(banned, p)
			}
			for _, e := range s.epochs {
				if e.ended && e.reason == "setup share fault: client excluded" {
					walked[i] = true
				}
			}
			s.mu.Unlock()
		}
		if len(banned) > 0 && len(walked) == 3 {
			if len(banned) != 1 || !bad[banned[0]] {
				t.Fatalf("banned %v, want exactly one of the two duplicating clients", banned)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("no share fault walked back to a culprit within 40 s")
}
