//go:build riffletest

package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestPrepareChainMinorityRefused (§3 v3, the swarm's seed 9): a
// certificate of number N verifies only with more than half of N−1's
// certificate's chain in its chain (verifyCertIn), so a Prepare of N over
// a chain that holds at most half of it is refused, and a leader proposes
// none. The group took number 9 over two of number 8's four servers and a
// newcomer; the two it had left out refused 9's certificate when they came
// back and never placed an epoch again.
func TestPrepareChainMinorityRefused(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 1, 0, 1, testParams(4), nil)
		s := tn.servers[0]
		ids := []peer.ID{s.ID()}
		for range 4 {
			k, _, err := crypto.GenerateEd25519Key(nil)
			if err != nil {
				t.Fatal(err)
			}
			id, _ := peer.IDFromPrivateKey(k)
			ids = append(ids, id)
		}
		// N−1's chain: s and three others; the newcomer is ids[4].
		prev := []peer.ID{ids[0], ids[1], ids[2], ids[3]}
		sortChain(prev)
		prepare := func(chain ...peer.ID) error {
			sortChain(chain)
			p := wire.Prepare{Number: 9, Params: s.cfg.Params.Wire(), Chain: proto.ChainIDs(chain),
				Previous: wire.Cert{Kind: wire.CertFinal, Number: 8, Chain: proto.ChainIDs(prev)}}
			_, _, err := s.onPrepare(ids[1], p.Marshal())
			return err
		}
		if err := prepare(ids[0], ids[1], ids[4]); !errors.Is(err, certs.ErrChainMinority) {
			t.Fatalf("a chain with 2 of the 4 servers of the previous certificate: %v, want %v", err, certs.ErrChainMinority)
		}
		if err := prepare(ids[0], ids[1], ids[2], ids[4]); errors.Is(err, certs.ErrChainMinority) {
			t.Fatalf("a chain with 3 of the 4 servers of the previous certificate: %v", err)
		}
		if certs.HoldsGroup(proto.ChainIDs([]peer.ID{ids[0], ids[1]}), &wire.Cert{Kind: wire.CertTimeout, Number: 8, Chain: proto.ChainIDs(prev)}) {
			t.Fatal("2 of 4 held a timeout certificate's group")
		}
	})
}

// TestWouldServeAsPrepare (§3 v3, the swarm's seed 5): a server asked
// whether it would serve in a chain answers as it would answer the
// Prepare. One that counts a server of the chain out for its refusal
// budget, where the leader does not, refuses the leader's Prepare; left
// out of the next attempt, it answered the others' would-serve question
// yes, so they refused that attempt in turn ("leaves out … which would
// serve"), and the group ran no epoch for good. Now it refuses the
// question too, and its absence is taken.
func TestWouldServeAsPrepare(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		const m = 4
		tn := startAnonNet(t, m, 2, 2, testParams(4), func(_ int, c *ServerConfig) { c.MinServers = 3 })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, s := range tn.servers {
			if err := wait.Until(ctx, 2*time.Minute, func() bool { return s.cert.Top() >= 3 }); err != nil {
				t.Fatalf("no epochs: %v", err)
			}
		}
		// s3 counts two aborts of s0 one number apart: s0 is out for its
		// budget there, and nowhere else.
		asked, out, from := tn.servers[3], tn.servers[0].ID(), tn.servers[1].ID()
		top := asked.cert.Top()
		asked.ref.Add(
			chargelog.Record{Peer: out.String(), Number: top, Window: m, Reason: "test"},
			chargelog.Record{Peer: out.String(), Number: top + 1, Window: m, Reason: "test"})
		if !asked.refusalOutAt(out, top+2) {
			t.Fatal("s0 is not out of number top+2 for its budget at s3")
		}
		var chain []peer.ID
		for _, s := range tn.servers {
			chain = append(chain, s.ID())
		}
		sortChain(chain)
		q := wire.Prepare{Number: top + 2, Params: asked.cfg.Params.Wire(), Chain: proto.ChainIDs(chain)}
		if _, _, err := asked.would.OnWouldServe(ctx, from, q.Marshal()); err == nil {
			t.Fatal("s3 would serve in a chain with s0, which it counts out for its refusal budget (its Prepare would be refused)")
		}
		// Without s0, it would serve.
		var rest []peer.ID
		for _, p := range chain {
			if p != out {
				rest = append(rest, p)
			}
		}
		q.Chain = proto.ChainIDs(rest)
		if _, _, err := asked.would.OnWouldServe(ctx, from, q.Marshal()); err != nil {
			t.Fatalf("s3 would not serve without s0: %v", err)
		}
	})
}
