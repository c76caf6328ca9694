//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/chunks"
)

// lackCase is the round a hook of a lack test fired in, and its epoch.
type lackCase struct {
	mu    sync.Mutex
	bad   *Server
	fired bool
	epoch [32]byte
	round uint32
}

// once reports true for the first round r ≥ 1 it is asked about (round 0
// may still race the setup's end at the receiver).
func (c *lackCase) once(r uint32) bool {
	if r < 1 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fired {
		return false
	}
	c.fired, c.round, c.epoch = true, r, c.cur()
	return true
}

// cur is the bad server's running epoch. It takes the server's lock: the
// hooks are called without it (sendBatch, onGetBatch before it locks).
func (c *lackCase) cur() [32]byte {
	c.bad.mu.Lock()
	defer c.bad.mu.Unlock()
	var cur [32]byte
	for id, e := range c.bad.epochs {
		if !e.ended && e.final != nil {
			cur = id
		}
	}
	return cur
}

func (c *lackCase) get(t *testing.T) ([32]byte, uint32) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fired {
		t.Fatal("the hook never fired")
	}
	return c.epoch, c.round
}

// lackShare shares a file from bn's first client and fetches it whole
// from the second, byte-exact.
func lackShare(t *testing.T, bn *blameNet, size int) {
	t.Helper()
	up, down := bn.clients[0], bn.clients[1]
	data := make([]byte, size)
	rand.Read(data)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	link := shareConfirmed(ctx, t, up, data, "lack.bin")
	path, err := down.Get(ctx, link, t.TempDir())
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched bytes differ (%v)", err)
	}
}

// epochRanOn waits until epoch id has ended at s after its last round and
// returns its count of void rounds.
func epochRanOn(t *testing.T, s *Server, id [32]byte) int {
	t.Helper()
	err := wait.Until(context.Background(), 30*time.Second, func() bool {
		for _, es := range s.Snapshot().Epochs {
			if es.ID == id {
				return es.Ended && es.Listed == es.Rounds
			}
		}
		return false
	})
	if err != nil {
		for _, es := range s.Snapshot().Epochs {
			if es.ID == id {
				t.Fatalf("the epoch ended after %d of %d rounds: %s", es.Listed, es.Rounds, es.Reason)
			}
		}
		t.Fatalf("the epoch is not kept: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epochs[id].voids
}

// TestLostBatchFetched: the middle server's batch of one round is lost on
// its way to the last server. The last server, told of the batch by its
// broadcast root, fetches it from the middle server, and the round is
// published as if nothing had happened: the epoch runs to its last round
// with no void, and the shared file is fetched whole. Before, the failed
// delivery ended the epoch.
func TestLostBatchFetched(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(8)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		c := &lackCase{bad: bn.servers[1]}
		c.bad.hooks.Store(&serverHooks{loseOut: c.once})
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		epoch, r := c.get(t)
		for i, s := range bn.servers {
			if v := epochRanOn(t, s, epoch); v != 0 {
				t.Fatalf("server %d: %d void round(s), want none", i, v)
			}
			bs, ok := s.store.(*chunks.BoltStore)
			if !ok {
				t.Fatal("no bolt store")
			}
			if _, err := bs.DB().Round(epoch, r); err != nil {
				t.Fatalf("server %d: the lost round %d was not published: %v", i, r, err)
			}
		}
		for i, s := range bn.servers {
			if n := len(s.ref.RefusalCounts()); n != 0 {
				t.Fatalf("server %d counts %d refusals, want none", i, n)
			}
		}
		t.Logf("round %d lost in transit, fetched and published; the epoch ran to its end", r)
	})
}

// TestWithheldBatchTwiceEndsEpoch: S_0 withholds its batch of two rounds
// of one epoch from every server. The first is void and the epoch goes
// on; the second ends the epoch (one void an epoch), and its abort too is
// counted against S_0, the withholder: the others attest they could not
// get the batch either (lack.go's relay). Never S_1, the claimant, nor
// the last server. Before the relay, both were charged to S_1.
func TestWithheldBatchTwiceEndsEpoch(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(8)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		var mu sync.Mutex
		var rounds []uint32
		var epoch [32]byte
		bad := bn.servers[0]
		bad.hooks.Store(&serverHooks{hideOut: func(r uint32) bool {
			mu.Lock()
			defer mu.Unlock()
			if r < 1 || len(rounds) == 2 {
				return false
			}
			bad.mu.Lock()
			var cur [32]byte
			for id, e := range bad.epochs {
				if !e.ended && e.final != nil {
					cur = id
				}
			}
			bad.mu.Unlock()
			if len(rounds) == 1 && cur != epoch {
				return false
			}
			epoch = cur
			rounds = append(rounds, r)
			return true
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		err := wait.Until(ctx, 60*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			if len(rounds) < 2 {
				return false
			}
			for _, es := range bn.servers[1].Snapshot().Epochs {
				if es.ID == epoch {
					return es.Ended
				}
			}
			return false
		})
		if err != nil {
			t.Fatalf("two rounds withheld and the epoch ended: %v (rounds %v)", err, rounds)
		}
		withholder := bn.servers[0].h.ID()
		for i, s := range bn.servers {
			for _, es := range s.Snapshot().Epochs {
				if es.ID == epoch && es.Listed == es.Rounds {
					t.Fatalf("server %d: the epoch ran to its end after a second void", i)
				}
			}
			if err := wait.Until(ctx, 10*time.Second, func() bool { return s.ref.RefusalCounts()[withholder] == 1 }); err != nil {
				t.Fatalf("server %d counts %v; want one against the withholder %s", i, s.ref.RefusalCounts(), withholder.ShortString())
			}
		}
		// The epoch's abort is signed after AbortSettle: give it that and
		// more to charge anyone else.
		for i, s := range bn.servers {
			if wait.Until(ctx, s.cfg.Timing.AbortSettle+2*time.Second, func() bool { return len(s.ref.RefusalCounts()) != 1 }) == nil {
				t.Fatalf("server %d counts %v; want one, against the withholder %s only", i, s.ref.RefusalCounts(), withholder.ShortString())
			}
		}
		t.Logf("rounds %v withheld by S_0: the first void, the second ended the epoch; both charged to S_0", rounds)
	})
}

// shareConfirmed shares data from up and waits, within ctx, for the share
// to end with every chunk confirmed published and no warning; it returns
// the link.
func shareConfirmed(ctx context.Context, t *testing.T, up *Client, data []byte, name string) chunker.Link {
	t.Helper()
	h, err := up.StartShare(ctx, bytes.NewReader(data), name, false)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-ctx.Done():
		t.Fatal("the share did not end in time")
	}
	link, _, warn, err := h.Result()
	if err != nil || len(warn) > 0 || up.Stats().Unconfirmed > 0 {
		t.Fatalf("share: %v, warnings %q, %d unconfirmed", err, warn, up.Stats().Unconfirmed)
	}
	return link
}
