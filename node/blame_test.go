//go:build riffletest

package node_test

import (
	"context"
	"crypto/rand"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
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
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 4, Params: node.TestParams(8),
			Client: func(i int, c *client.ClientConfig) {
				if i == 1 || i == 2 {
					c.Rand = &dupReader{}
				}
			}})
		bad := map[peer.ID]bool{tn.Clients[1].Inspect().PeerID(): true, tn.Clients[2].Inspect().PeerID(): true}
		var banned []peer.ID
		walked := map[int]bool{} // servers seen ending an epoch on the walk
		err := wait.Until(context.Background(), 40*time.Second, func() bool {
			banned = nil
			for i, s := range tn.Servers {
				banned = append(banned, s.Banned()...)
				if s.EndedWith("setup share fault: client excluded") {
					walked[i] = true
				}
			}
			return len(banned) > 0 && len(walked) == 3
		})
		if err != nil {
			t.Fatal("no share fault walked back to a culprit within 40 s")
		}
		// Each fault names one of the two duplicating clients (the later
		// position); a second epoch that starts before the ban takes effect
		// may name the other, which is a culprit too. An honest client must
		// never be named.
		for _, p := range banned {
			if !bad[p] {
				t.Fatalf("banned %v: %s is an honest client", banned, p)
			}
		}
		// The culprit's long-term key is refused at every server (§8); the
		// two culprits drew theirs from one repeating reader, so it is one
		// key. An honest client's is refused nowhere.
		if err := wait.Until(context.Background(), 20*time.Second, func() bool {
			for _, s := range tn.Servers {
				if !s.KeyExcludedNext(tn.Clients[1].Inspect().LongTermPublic()) {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatal("the culprit's long-term key is not excluded at every server")
		}
		for _, s := range tn.Servers {
			if s.KeyExcludedNext(tn.Clients[0].Inspect().LongTermPublic()) || s.KeyExcludedNext(tn.Clients[3].Inspect().LongTermPublic()) {
				t.Fatal("an honest client's long-term key is excluded")
			}
		}
	})
}
