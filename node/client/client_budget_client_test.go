package client

import (
	"crypto/rand"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestClientRefusesBudgetDrop: a client whose window's walk shows, in the
// certificates of the walked descriptors, two aborts signed by a server of
// a walked chain less than m epochs apart refuses a chain that leaves that
// server out, says why and how to accept, until the server is back or its
// budget window is over; with AcceptBudgetDrops it takes the chain. A
// server dropped without such aborts, or whose aborts were the leader's
// coordination aborts, is no reason to refuse (docs/protocol.md §3 "Who
// may serve"). What it decides follows from the walk alone, the same for
// every client of the epoch: each step is a fresh client (issue 26).
func TestClientRefusesBudgetDrop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ids := make([]peer.ID, 3)
		for i := range ids {
			_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if ids[i], err = peer.IDFromPublicKey(pub); err != nil {
				t.Fatal(err)
			}
		}
		full := append([]peer.ID(nil), ids...)
		slices.Sort(full) // the chain order (sortChain)
		x := full[2]
		short := full[:2]
		// abortCert is the certificate of number n, aborted by signer.
		abortCert := func(n uint64, signer peer.ID, kind uint8) wire.Cert {
			ab := wire.Abort{Number: n, Kind: kind, Signer: []byte(signer), Reason: []byte("no")}
			return wire.Cert{Kind: wire.CertAbort, Number: n, Chain: proto.ChainIDs(full), Abort: ab.Marshal()}
		}
		finalCert := func(n uint64, chain []peer.ID) wire.Cert {
			return wire.Cert{Kind: wire.CertFinal, Number: n, Chain: proto.ChainIDs(chain)}
		}
		desc := func(n uint64, prev wire.Cert) *wire.Descriptor { return &wire.Descriptor{Number: n, Previous: prev} }
		type step struct {
			d      *wire.Descriptor
			chain  []peer.ID
			refuse bool
		}
		// view is what the walk back from step i's descriptor shows: the
		// certificates of the descriptors before it and their chains.
		view := func(steps []step, i int) budgetView {
			bv := budgetView{Chains: map[uint64][]peer.ID{}}
			for j := i; j >= 0; j-- {
				bv.Certs = append(bv.Certs, steps[j].d.Previous)
				if j < i {
					bv.Chains[steps[j].d.Number] = steps[j].chain
				}
			}
			return bv
		}
		run := func(name string, accept bool, steps []step) *Client {
			var c *Client
			for i, s := range steps {
				c = &Client{log: quietLogger(), cfg: ClientConfig{AcceptBudgetDrops: accept}}
				err := c.takeChain(s.d, s.chain, view(steps, i))
				if (err != nil) != (s.refuse && !accept) {
					t.Fatalf("%s, step %d (epoch %d): refused %v, want %v", name, i, s.d.Number, err, s.refuse)
				}
				if err != nil && (!strings.Contains(err.Error(), x.ShortString()) || !strings.Contains(err.Error(), "refusal budget") ||
					!strings.Contains(err.Error(), "--accept-budget-drops") || !strings.Contains(err.Error(), "accept-budget-drops = true")) {
					t.Fatalf("%s: the refusal does not say why and how to accept: %v", name, err)
				}
			}
			return c
		}
		// x aborts epochs 2 and 3 (m = 3) and is left out of 4, 5, 6.
		budget := []step{
			{desc(2, finalCert(1, full)), full, false},
			{desc(3, abortCert(2, x, wire.AbortFault)), full, false},
			{desc(4, abortCert(3, x, wire.AbortFault)), short, true},
			{desc(5, finalCert(4, short)), short, true}, // x is in the walked chain of 3
			{desc(6, finalCert(5, short)), short, true},
			{desc(7, finalCert(6, short)), short, false}, // its window is over
		}
		if c := run("budget drop", false, budget); len(c.lastGroup) != 2 {
			t.Fatalf("the chain taken after the window is %v", c.lastGroup)
		}
		// Back in the chain: taken at once.
		run("budget drop, server back", false, append(budget[:3:3], step{desc(4, abortCert(3, x, wire.AbortFault)), full, false}))
		// The user accepts: taken, and the chain taken becomes the group.
		c := run("accepted", true, budget[:3])
		if len(c.lastGroup) != 2 {
			t.Fatalf("accepted chain not taken as the group: %v", c.lastGroup)
		}
		// One abort, or two m or more apart: no budget drop.
		run("one abort", false, []step{
			{desc(2, finalCert(1, full)), full, false},
			{desc(3, abortCert(2, x, wire.AbortFault)), full, false},
			{desc(4, finalCert(3, full)), short, false},
		})
		run("aborts far apart", false, []step{
			{desc(2, abortCert(1, x, wire.AbortFault)), full, false},
			{desc(3, finalCert(2, full)), full, false},
			{desc(4, finalCert(3, full)), full, false},
			{desc(5, abortCert(4, x, wire.AbortFault)), short, false},
		})
		// The leader's coordination abort is charged to nobody (the leader of
		// n is chain[n mod m]); another server's counts.
		if full[2%3] != x {
			t.Fatal("x leads epoch 2")
		}
		run("leader's coordination abort", false, []step{
			{desc(3, abortCert(2, x, wire.AbortCoord)), full, false},
			{desc(4, abortCert(3, x, wire.AbortFault)), short, false},
		})
		run("coordination abort of a non-leader", false, []step{
			{desc(4, abortCert(3, x, wire.AbortCoord)), full, false},
			{desc(5, abortCert(4, x, wire.AbortFault)), short, true},
		})
		// A registration never closed (issue 26, F3): the servers charge
		// the leader if a majority of the others attest it, else the
		// signer; a certificate carries no attestations, so the client
		// counts it against both. Before, it charged the leader only, and
		// a server the servers charged for two unbacked aborts of its own
		// was dropped with the client's consent.
		run("no-close aborts signed by a non-leader", false, []step{
			{desc(4, abortCert(3, x, wire.AbortNoClose)), full, false},
			{desc(5, abortCert(4, x, wire.AbortNoClose)), short, true},
		})
		run("no-close abort of the leader's epoch", false, []step{
			{desc(3, abortCert(2, full[0], wire.AbortNoClose)), full, false},
			{desc(4, abortCert(3, x, wire.AbortFault)), short, true},
		})
	})
}
