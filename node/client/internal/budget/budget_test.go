package budget

import (
	"crypto/rand"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestDropped: a server of a walked chain missing from N's chain, with two
// aborts of its own less than m numbers apart, the second fewer than m
// numbers before N, is a budget drop; the leader's coordination abort is
// charged to nobody, a registration never closed to the signer and the
// leader, a server down to the signer and that server (docs/protocol.md §3
// "Who may serve").
func TestDropped(t *testing.T) {
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
	full := slices.Sorted(slices.Values(ids))
	x, short := full[2], full[:2]
	abortCert := func(n uint64, signer peer.ID, kind uint8) wire.Cert {
		ab := wire.Abort{Number: n, Kind: kind, Signer: []byte(signer), Reason: []byte("no")}
		return wire.Cert{Kind: wire.CertAbort, Number: n, Chain: proto.ChainIDs(full), Abort: ab.Marshal()}
	}
	downCert := func(n uint64, signer peer.ID, down uint32) wire.Cert {
		ab := wire.Abort{Number: n, Round: down, Kind: wire.AbortDown, Signer: []byte(signer), Reason: []byte("left")}
		return wire.Cert{Kind: wire.CertAbort, Number: n, Chain: proto.ChainIDs(full), Abort: ab.Marshal()}
	}
	// walk: the certificates given, each epoch's chain full.
	walk := func(certs ...wire.Cert) View {
		v := View{Chains: map[uint64][]peer.ID{}}
		for _, c := range certs {
			v.Certs = append(v.Certs, c)
			v.Chains[c.Number] = full
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		v     View
		n     uint64
		chain []peer.ID
		drop  bool
	}{
		{"two aborts m apart less one", walk(abortCert(2, x, wire.AbortFault), abortCert(3, x, wire.AbortFault)), 4, short, true},
		{"kept in the chain", walk(abortCert(2, x, wire.AbortFault), abortCert(3, x, wire.AbortFault)), 4, full, false},
		{"window over", walk(abortCert(2, x, wire.AbortFault), abortCert(3, x, wire.AbortFault)), 7, short, false},
		{"one abort", walk(abortCert(2, x, wire.AbortFault)), 4, short, false},
		{"aborts m apart", walk(abortCert(1, x, wire.AbortFault), abortCert(4, x, wire.AbortFault)), 5, short, false},
		{"leader's coordination abort", walk(abortCert(2, x, wire.AbortCoord), abortCert(3, x, wire.AbortFault)), 4, short, false},
		{"another's coordination abort", walk(abortCert(3, x, wire.AbortCoord), abortCert(4, x, wire.AbortFault)), 5, short, true},
		{"no-close of the leader's epoch", walk(abortCert(2, full[0], wire.AbortNoClose), abortCert(3, x, wire.AbortFault)), 4, short, true},
		{"another server's abort saying x was down", walk(downCert(2, full[0], 2), abortCert(3, x, wire.AbortFault)), 4, short, true},
	} {
		why := tc.v.Dropped(tc.chain, tc.n)
		if (why != nil) != tc.drop {
			t.Errorf("%s: dropped %v, want a drop %v", tc.name, why, tc.drop)
		}
		if why != nil && (len(why) != 1 || !strings.Contains(why[0], x.ShortString())) {
			t.Errorf("%s: %v does not name x alone", tc.name, why)
		}
	}
}
