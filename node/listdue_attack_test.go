//go:build riffletest

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestStaleListAnswer (the rev41b review, HIGH): a corrupt S_0 delivers
// the last two lists to S_1 and S_2 only and answers S_3's ListReq with
// round 0's list (valid, signed by the chain). S_3 took the first reply
// that onRoundList took without error, S_0's, and stopped asking: it
// never read S_1's and S_2's, and ended the epoch at ListGone with the
// abort of the missing list, charged to itself. Now only a list of
// exactly the round asked counts, and S_3 takes it from S_1 or S_2: the
// epoch completes at every honest server and no honest one is charged.
func TestStaleListAnswer(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		s3 := ln.chain[3].ID()
		ln.chain[0].hooks.Store(&serverHooks{
			listTo:       func(r uint32, p peer.ID) bool { return r < last-1 || p != s3 },
			listReqRound: func(uint32) uint32 { return 0 },
		})
		honest := ln.chain[1:]
		ln.ended(t, honest, 3*time.Minute)
		for _, s := range honest {
			if r := ln.reason(s); r != "complete" {
				t.Errorf("%s: ended %q, not complete", s.ID().ShortString(), r)
			}
		}
		ln.chain[0].hooks.Store(nil)
		ln.charges(t, honest, nil)
	})
}

// TestLateListSignature (the rev41b review, HIGH): an honest S_0
// proposes the lists of the last two rounds at once; a corrupt S_1
// holds its signature of each 25 s, inside the time S_0 waits for it.
// With the list-due abort, S_2 and S_3 gave the list up 20 s past the
// publication's due, ended the epoch with the abort of the missing list
// and attested, truly, that none came by their due: the honest S_0 was
// charged at the three honest servers. Now nobody signs that abort: the
// lists come late, the epoch completes and nobody is charged.
func TestLateListSignature(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		ln.chain[1].hooks.Store(&serverHooks{signLate: func(r uint32) time.Duration {
			if r >= last-1 {
				return 25 * time.Second
			}
			return 0
		}})
		honest := []*Server{ln.chain[0], ln.chain[2], ln.chain[3]}
		ln.ended(t, honest, 3*time.Minute)
		ln.chain[1].hooks.Store(nil)
		for _, s := range honest {
			if r := ln.reason(s); r != "complete" {
				t.Errorf("%s: ended %q, not complete", s.ID().ShortString(), r)
			}
		}
		ln.charges(t, honest, nil)
	})
}

// TestListLiarAfterRecovery (the rev41b review, MEDIUM): an honest S_0
// whose last two lists never reach S_3, which takes them from the chain
// past their due and so attested them missing; a corrupt S_1 then signs
// the abort of the missing list of round last-1 with its own lying
// attestation: two of S_0's three others backed it and the honest S_0
// was charged, though the epoch had completed. Now such an abort
// charges its signer, S_1, whatever is attested.
func TestListLiarAfterRecovery(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		s3 := ln.chain[3]
		ln.chain[0].hooks.Store(&serverHooks{listTo: func(r uint32, p peer.ID) bool { return r < last-1 || p != s3.ID() }})
		q := last - 1
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool {
			s3.mu.Lock()
			defer s3.mu.Unlock()
			x := s3.epochs[ln.id].rounds[q]
			return x != nil && x.list != nil
		}); err != nil {
			t.Fatalf("S_3 never took round %d's list", q)
		}
		s1 := ln.chain[1]
		s1.mu.Lock()
		s1.signNoListLocked(s1.epochs[ln.id], q, "no request list (a lie)")
		s1.mu.Unlock()
		ln.chain[0].hooks.Store(nil)
		ln.charges(t, []*Server{ln.chain[0], ln.chain[2], ln.chain[3]}, s1)
	})
}

// TestUnattestableNoListCharged (the rev42a review, F1, CRITICAL): a
// corrupt S_1 of three signs the abort of the missing list of a round
// no honest server had open (beyond the admission window, or past the
// epoch's rounds). No honest server attests such a round, and the kind
// 7 verdict waited while S_0 might still be attested: every server
// ended the epoch and charged nobody, for good, each epoch the signer
// was in. Now the abort charges its signer at once.
func TestUnattestableNoListCharged(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	for _, where := range []string{"beyond window", "past rounds"} {
		t.Run(where, func(t *testing.T) {
			virtual(t, func(t *testing.T) {
				fn := startFounded(t, 3, 3, 3, testParams(16), nil)
				byID := map[peer.ID]*Server{}
				for _, s := range fn.servers {
					byID[s.ID()] = s
				}
				id, chain := runningEpoch(t, fn.servers[0])
				culprit := byID[chain[1]]
				culprit.mu.Lock()
				e := culprit.epochs[id]
				q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead + 3
				if where == "past rounds" {
					q = e.final.Desc.Params.Rounds + 7
				}
				culprit.signNoListLocked(e, q, fmt.Sprintf("round %d: no list", q))
				culprit.mu.Unlock()
				fn.waitEpochs(t, fn.epochs(), 2*time.Minute)
				// The signer's charge at each server is waited for with the
				// network running; then the clients leave, so that the
				// minute's settle for S_0's runs no epoch (in virtual time,
				// each one run in it was CPU).
				wait.Until(context.Background(), time.Minute, func() bool {
					for _, s := range fn.servers {
						if s.ref.RefusalCounts()[culprit.ID()] < 1 {
							return false
						}
					}
					return true
				}) // on a timeout the checks below say where it is missing
				for _, c := range fn.clients {
					c.Close()
				}
				time.Sleep(time.Minute) // virtual: any attestation still to come
				for i, s := range fn.servers {
					counts := s.ref.RefusalCounts()
					t.Logf("server %d: counts of the signer %d, of S_0 %d", i, counts[culprit.ID()], counts[chain[0]])
					if counts[culprit.ID()] < 1 || counts[chain[0]] != 0 {
						t.Errorf("server %d: the list abort of round %d (%s) charged the signer %d times, S_0 %d", i, q, where, counts[culprit.ID()], counts[chain[0]])
					}
				}
			})
		})
	}
}

// TestSlowSignersEndNothing: every server but S_0 takes 25 s to sign
// S_0's proposals of the last two rounds (slow checks or chunk fetches),
// past ListGone, 20 s after the publication's due. A server that got a
// proposal signs no note that none came: the lists come late, the epoch
// completes everywhere and nobody is charged (with a note signed while
// the proposal was unsigned here, three of four noted and the epoch
// ended, its last lists lost).
func TestSlowSignersEndNothing(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		ln := startListNet(t)
		last := ln.fn.servers[0].cfg.Params.Rounds - 1
		for _, s := range ln.chain[1:] {
			s.hooks.Store(&serverHooks{signLate: func(r uint32) time.Duration {
				if r >= last-1 {
					return 25 * time.Second
				}
				return 0
			}})
		}
		ln.ended(t, ln.chain, 3*time.Minute)
		for _, s := range ln.chain {
			s.hooks.Store(nil)
			if r := ln.reason(s); r != "complete" {
				t.Errorf("%s: ended %q, not complete", s.ID().ShortString(), r)
			}
		}
		ln.charges(t, ln.chain, nil)
	})
}
