//go:build riffletest

package node

import (
	"context"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/chargelog"
)

// TestStalledOnionFramesS0 (issue 25): a corrupt primary (of three
// servers, round limit 4 s) keeps its client's round-0 onion from S_0.
// Nobody but the primary and its client can tell a held onion from one
// never sent, and no list is final before round 0, so no primary's
// dry-slot check runs: S_0 waits the round limit and ends the epoch,
// "round 0 not filled". Before, that abort was a fault abort, charged to
// its signer, honest S_0, at every honest server; now a dry slot charges
// nobody (the holder, or nobody, never S_0).
func TestStalledOnionFramesS0(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		p := testParams(16)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		bad := bn.servers[1] // the primary of client 1
		var (
			mu    sync.Mutex
			fired bool
			held  [32]byte
		)
		bad.hooks.Store(&serverHooks{holdSubs: func(epoch [32]byte, r uint32) bool {
			mu.Lock()
			defer mu.Unlock()
			if !fired && r == 0 {
				fired, held = true, epoch
			}
			return fired && epoch == held && r == 0
		}})
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return fired
		}); err != nil {
			t.Fatal("the primary never forwarded a round 0")
		}
		mu.Lock()
		id := held
		mu.Unlock()
		bad.mu.Lock()
		chain := append([]peer.ID(nil), bad.epochs[id].final.Chain...)
		bad.mu.Unlock()
		byID := map[peer.ID]*Server{}
		for _, s := range bn.servers {
			byID[s.ID()] = s
		}
		s0 := byID[chain[0]]
		var reason string
		if err := wait.Until(context.Background(), time.Minute, func() bool {
			for _, es := range s0.Snapshot().Epochs {
				if es.ID == id && es.Ended {
					reason = es.Reason
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatal("the held epoch never ended at S_0")
		}
		if !strings.Contains(reason, "round 0 not filled") {
			t.Fatalf("the epoch ended at S_0 for %q, not an unfilled round 0", reason)
		}
		for _, p := range chain {
			h := byID[p]
			if h == bad {
				continue
			}
			// S_0's abort, as judged there: the evidence's record of the
			// epoch, whoever it charges.
			var rec *chargelog.Record
			_ = wait.Until(context.Background(), 10*time.Second, func() bool {
				for _, r := range h.ref.Records(false) {
					if r.Epoch == hex.EncodeToString(id[:]) {
						rec = &r
						return true
					}
				}
				return false
			})
			if rec == nil {
				t.Errorf("no evidence of the held epoch at %s", p.ShortString())
				continue
			}
			t.Logf("server %s: the abort's record charges %q (%s); counts %v", p.ShortString(), rec.Peer, rec.Reason, h.ref.RefusalCounts())
			for _, q := range chain {
				if q != bad.ID() && h.ref.RefusalCounts()[q] > 0 {
					t.Errorf("honest %s charged at %s", q.ShortString(), p.ShortString())
				}
			}
		}
	})
}
