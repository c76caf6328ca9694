//go:build riffletest

package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/mix"
)

// More of the malicious-server cast (docs/proto-node.md "Round blame"): a
// server that swaps two entries of its output, one that signs a setup
// step whose shuffle proof does not verify, and a last server that
// withholds publication. A server that silently leaves one entry out is
// TestRoundBlameMissingEntry.

// castPositions are the chain positions a case runs at (m = 3).
func castPositions(all ...int) []int {
	if testing.Short() {
		return all[len(all)/2 : len(all)/2+1]
	}
	return all
}

// TestCastServerSwaps: a server that swaps two entries of its output batch
// (each intact, in the wrong place) is named by every honest server: the
// next server's MAC check fails at the moved position, or, after the last
// server, the moved payloads fail their pseudonyms' signatures.
func TestCastServerSwaps(t *testing.T) {
	t.Parallel()
	for _, k := range castPositions(0, 1, 2) {
		t.Run(fmt.Sprintf("pos%d", k), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				serverCase(t, k, func(fired *atomic.Bool) *serverHooks {
					return &serverHooks{corruptOut: func(r uint32, out [][]byte) {
						if r == 1 && len(out) > 1 && fire(fired) {
							out[0], out[1] = out[1], out[0]
						}
					}}
				})
			})
		})
	}
}

// TestCastBadShuffleProof: a server whose signed setup step does not
// verify (one byte of its shuffle proof altered before it signs) is named
// by every honest server from the signed step alone, at each position.
func TestCastBadShuffleProof(t *testing.T) {
	t.Parallel()
	for _, k := range castPositions(0, 1, 2) {
		t.Run(fmt.Sprintf("pos%d", k), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				recs := serverCaseEvidence(t, k, 1, func(fired *atomic.Bool) *serverHooks {
					return &serverHooks{badProof: func(raw []byte) {
						if fire(fired) {
							// The shuffle proof's last byte (the DLEQ follows it).
							raw[len(raw)-mix.DLEQProofSize-1] ^= 1
						}
					}}
				})
				for _, r := range recs {
					if !strings.Contains(r.Reason, "shuffle proof does not verify") {
						t.Fatalf("named for %q, not the shuffle proof", r.Reason)
					}
				}
			})
		})
	}
}

// TestCastWithholdsPublication: the last server never publishes (it signs
// and keeps round 1's payloads, every epoch). Nothing public shows it, so
// nobody is named; at the round limit the round is signed void (the epoch
// goes on, §5.2 v3), which every server that lacks the publication too
// charges to the last server's refusal budget. After its second, it
// is left out of the next m chains and an honest share and get complete
// byte-exact. The last position is the only one that publishes.
func TestCastWithholdsPublication(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		// A short round limit: each withheld epoch ends when it runs out.
		p := testParams(6)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 3, 2, 4, 2)
		k := 2
		bad := bn.servers[k]
		var mu sync.Mutex
		var epochs int
		var lastEpoch [32]byte
		start := time.Now()
		bad.hooks.Store(&serverHooks{withhold: func(r uint32) bool {
			if r != 1 {
				return false
			}
			// One withheld round per epoch (the hook runs in the mix loop of
			// one epoch at a time).
			bad.mu.Lock()
			var cur [32]byte
			for id, e := range bad.epochs {
				if !e.ended {
					cur = id
				}
			}
			bad.mu.Unlock()
			mu.Lock()
			if cur != lastEpoch {
				lastEpoch = cur
				epochs++
			}
			mu.Unlock()
			return true
		}})
		var honest []*Server
		for j, s := range bn.servers {
			if j != k {
				honest = append(honest, s)
			}
		}
		if err := wait.UntilEvery(context.Background(), 60*time.Second, 50*time.Millisecond, func() bool {
			out := true
			for _, s := range honest {
				out = out && s.refusalOut(bad.h.ID())
			}
			return out
		}); err != nil {
			t.Fatal("the withholding server is not left out within 60 s")
		}
		outAfter := time.Since(start).Round(time.Millisecond)
		var up, down *Client
		for i, c := range bn.clients {
			if i%3 != k {
				up, down = down, c
			}
		}
		shareAndGet(t, up, down)
		for _, s := range honest {
			recs, err := s.rb.Records()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) > 0 {
				t.Fatalf("a withheld publication named someone: %+v", recs[0])
			}
			counts := s.ref.RefusalCounts()
			for p, n := range counts {
				if p != bad.h.ID() {
					t.Fatalf("honest server %s charged with %d aborts", p.ShortString(), n)
				}
			}
			if counts[bad.h.ID()] < 2 {
				t.Fatalf("the withholding server is charged %d times", counts[bad.h.ID()])
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("withheld publication in %d epochs; left out %v after the start; honest share and get done %v after the start", epochs, outAfter, time.Since(start).Round(time.Millisecond))
	})
}
