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

// dupReader is crypto/rand except for the scalar u_{i,1} of every
// registration, which is a fixed pattern. mix.Register reads 32 bytes for
// the registration key (ed25519.GenerateKey), then per component 64 for
// u_{i,j}, 64 for r_{i,j} and 32 for the proof nonce: the 64-byte read
// after the sizes 32, 64, 64, 32 is u_{i,1} (or a later component's scalar,
// which repeats too; the fault at S_1 comes first). Two clients with such
// readers register the same U for server 1 under different ciphertexts,
// which no registration check can see, in whatever epoch they join.
type dupReader struct {
	mu   sync.Mutex
	last [4]int
}

func (d *dupReader) Read(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hit := len(p) == 64 && d.last == [4]int{32, 64, 64, 32}
	d.last = [4]int{d.last[1], d.last[2], d.last[3], len(p)}
	if hit {
		for i := range p {
			p[i] = byte(i*7 + 1)
		}
		return len(p), nil
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
		cfg := ClientConfig{MinAnonymity: 1, Server: servers[i%3].Addrs()[0].String(), Logger: testLogger(t)}
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
			// Each fault names one of the two duplicating clients (the
			// later position); a second epoch that starts before the ban
			// takes effect may name the other, which is a culprit too. An
			// honest client must never be named.
			for _, p := range banned {
				if !bad[p] {
					t.Fatalf("banned %v: %s is an honest client", banned, p)
				}
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("no share fault walked back to a culprit within 40 s")
}
