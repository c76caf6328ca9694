//go:build riffletest

package node

import (
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestHandedProposalLetsListGoneEnd (issue 25, rev43 F3): five servers,
// a corrupt S_0 and a corrupt S_4, a minority. S_0 proposes the last two
// rounds' lists to S_4 alone and delivers none; S_4 signs, sends its
// signature to nobody, assembles nothing, and answers the honest
// servers' asks with S_0's signed proposal, as an honest signer does.
// The three honest servers sign the handed-on proposal, but S_0 proposed
// nothing to them: past ListGone each notes so, and with three notes of
// five the epoch ends at each, charging nobody. With a handed-on
// proposal counted as proposed, none noted and the epoch held for good.
func TestHandedProposalLetsListGoneEnd(t *testing.T) {
	virtual(t, func(t *testing.T) {
		p := testParams(8)
		p.RoundLimitMs = 4000
		fn := startFounded(t, 5, 5, 3, p, func(i int, c *ServerConfig) { c.MinServers = 4 })
		byID := map[peer.ID]*Server{}
		for _, s := range fn.servers {
			byID[s.ID()] = s
		}
		id, ids := runningEpoch(t, fn.servers[0])
		ln := &listNet{fn: fn, id: id, reasons: map[*Server]string{}, num: 1}
		for _, q := range ids {
			ln.chain = append(ln.chain, byID[q])
		}
		if len(ln.chain) != 5 {
			t.Fatalf("chain of %d", len(ln.chain))
		}
		last := p.Rounds - 1
		s4 := ln.chain[4].ID()
		ln.chain[0].hooks.Store(&serverHooks{
			proposalTo: func(r uint32, q peer.ID) bool { return r < last-1 || q == s4 },
		})
		ln.chain[4].hooks.Store(&serverHooks{listSigTo: func(peer.ID) bool { return false }, noAssemble: true})
		honest := ln.chain[1:4]
		ln.ended(t, honest, 6*time.Minute)
		for _, s := range honest {
			if r := ln.reason(s); !strings.Contains(r, "no request list proposed") {
				t.Errorf("%s: ended %q, not for the list never proposed to it", s.ID().ShortString(), r)
			}
		}
		ln.charges(t, honest, nil)
	})
}
