//go:build riffletest

package node

import (
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestPrepareChainMinorityRefused (§3 v3, the swarm's seed 9): a
// certificate of number N verifies only with more than half of N−1's
// certificate's chain in its chain (verifyCertIn), so a Prepare of N over
// a chain that holds at most half of it is refused, and a leader proposes
// none. The group took number 9 over two of number 8's four servers and a
// newcomer; the two it had left out refused 9's certificate when they came
// back and never placed an epoch again.
func TestPrepareChainMinorityRefused(t *testing.T) {
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
			p := wire.Prepare{Number: 9, Params: s.cfg.Params.wire(), Chain: chainIDs(chain),
				Previous: wire.Cert{Kind: wire.CertFinal, Number: 8, Chain: chainIDs(prev)}}
			_, _, err := s.onPrepare(ids[1], p.Marshal())
			return err
		}
		if err := prepare(ids[0], ids[1], ids[4]); !errors.Is(err, errChainMinority) {
			t.Fatalf("a chain with 2 of the 4 servers of the previous certificate: %v, want %v", err, errChainMinority)
		}
		if err := prepare(ids[0], ids[1], ids[2], ids[4]); errors.Is(err, errChainMinority) {
			t.Fatalf("a chain with 3 of the 4 servers of the previous certificate: %v", err)
		}
		if holdsCertGroup(chainIDs([]peer.ID{ids[0], ids[1]}), &wire.Cert{Kind: wire.CertTimeout, Number: 8, Chain: chainIDs(prev)}) {
			t.Fatal("2 of 4 held a timeout certificate's group")
		}
	})
}
