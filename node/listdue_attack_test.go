//go:build riffletest

package node

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
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
