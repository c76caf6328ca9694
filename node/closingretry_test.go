//go:build riffletest

package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
)

// TestClosingProposedAgain (§5.2 v3, the swarm's seed 9): S_0 of an epoch
// that cannot reach a chain server when the epoch ends proposes the
// closing record again once the link is back, and every chain server
// stores it. Proposed once, the record of an epoch whose rounds had all
// published was lost to a partition of 7 s: no server ever held it, and
// the servers outside the chain never took the files the epoch published,
// which clients had seen published and acknowledged.
func TestClosingProposedAgain(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		const m = 3
		net := testMemnet(t)
		var (
			mu     sync.Mutex
			tn     *anonNet
			cut    bool
			epoch  [32]byte
			victim int
		)
		tn = startAnonNet(t, m, 2, 2, testParams(4), func(i int, c *ServerConfig) {
			c.observe = &testObserver{Closing: func(c *wire.Closing) bool {
				mu.Lock()
				defer mu.Unlock()
				if cut || tn == nil {
					return true
				}
				// The first record: S_0 (server i) loses its links to
				// another chain server for 5 s.
				cut, epoch, victim = true, c.Epoch, (i+1)%m
				net.Partition([]peer.ID{tn.servers[i].ID()}, []peer.ID{tn.servers[victim].ID()})
				time.AfterFunc(5*time.Second, net.Heal)
				return true
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := wait.Until(ctx, 2*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return cut
		}); err != nil {
			t.Fatalf("no closing record proposed: %v", err)
		}
		mu.Lock()
		id, v := epoch, victim
		mu.Unlock()
		if err := wait.Until(ctx, 3*time.Minute, func() bool {
			for _, s := range tn.servers {
				if _, err := s.store.Closing(id); err != nil {
					return false
				}
			}
			return true
		}); err != nil {
			_, verr := tn.servers[v].store.Closing(id)
			t.Fatalf("the closing record of the epoch whose S_0 lost its link to s%d for 5 s is not at every server (s%d: %v)", v, v, verr)
		}
	})
}
