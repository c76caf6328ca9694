package node

import (
	"context"
	"testing"
	"time"
)

// TestRosterGossip: two servers that know only a third learn each other
// through its hellos, and all three agree on the chain.
func TestRosterGossip(t *testing.T) {
	ctx := context.Background()
	var servers []*Server
	var boot []string
	for i := 0; i < 3; i++ {
		s, err := NewServer(ctx, ServerConfig{DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: boot,
			MinServers: 9, NoLAN: true, Store: NewMemStore()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		servers = append(servers, s)
		if i == 0 {
			boot = []string{s.Addrs()[0].String()}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, s := range servers {
			ok = ok && len(s.chain()) == 3
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chains after 20 s: %d %d %d", len(servers[0].chain()), len(servers[1].chain()), len(servers[2].chain()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	c0 := servers[0].chain()
	for _, s := range servers[1:] {
		for i, id := range s.chain() {
			if id != c0[i] {
				t.Fatalf("chains differ at %d", i)
			}
		}
	}
}
