//go:build riffletest

package node

import (
	"strings"
	"sync"
	"testing"
)

// TestLackingS0ChargesNoPrimary (§5.4 "A forward root", principle 2): a
// corrupt S_0 (of three servers, round limit 4 s) ignores every other
// primary's forward of round 3, the onions its request for dry statements
// brings again too, ends the epoch "round 3 not filled" and attests every
// primary silent of every round. The honest primary's account of round 3
// carries its forward root, which covers the receipts its client shows:
// the third server, honest, attests nobody, S_0's word is one of a
// minority, and no server is charged. With an account that counts only
// without a root (checked by editing accountGiven), the third server
// attested the honest primary too and every server charged it.
func TestLackingS0ChargesNoPrimary(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	const lacked = 3
	virtual(t, func(t *testing.T) {
		bn, _ := startHeldNet(t)
		once := &roundOnce{r: lacked}
		var mu sync.Mutex
		var s0 *Server // the server the drop fired at: S_0 of the epoch
		for _, s := range bn.servers {
			s.hooks.Store(&serverHooks{
				dropSubs: func(epoch [32]byte, r uint32) bool {
					if !once.hit(epoch, r, 0) {
						return false
					}
					mu.Lock()
					s0 = s
					mu.Unlock()
					return true
				},
				silentAll: func(uint32) bool {
					mu.Lock()
					defer mu.Unlock()
					return s0 == s
				},
			})
		}
		eid, _ := once.wait(t, "no primary forwarded a round %d to S_0")
		chain, _, byID := finalOf(bn, eid)
		es := endedAt(t, byID[chain[0]], eid, "the lacked epoch never ended at S_0")
		if !strings.Contains(es.Reason, "not filled") {
			t.Fatalf("S_0 ended the epoch for %q, not the round it lacked", es.Reason)
		}
		mu.Lock()
		liar := s0
		mu.Unlock()
		if liar != byID[chain[0]] {
			t.Fatal("the forwards were dropped by a server other than S_0")
		}
		if a := accountsAsked(t, bn, eid, liar)[liar]; a.Lacking == 0 {
			t.Fatalf("S_0 attested no primary silent: %+v", a)
		}
	})
}
