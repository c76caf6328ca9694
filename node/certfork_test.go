package node

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestReplacedCertDropsPast: group G of 7 (D, K honest servers; k1, k2, d2,
// d3 honest keys; x corrupt). N runs on {K,k1,k2,x}; D, d2, d3 are outside
// it and, with x's vote, certify N by timeout over G, then certify N+1 and
// N+2 over {D,d2,d3,x} (a majority of G). N's final comes and is pushed to
// D, which replaces N's certificate: its N+1 no longer verifies against the
// group N's new certificate names, so D drops N+1 and N+2 (and their
// files), takes no certificate of N+1 over the old group again, and takes
// the N+1 that K's group certifies over {K,k1,k2}. Before, D kept its N+1,
// K refused it and certified its own: D and K kept different final
// certificates of N+1 for good ("FORK: N+1 at D is epoch 07 over 4
// servers, at K epoch 08 over 3 servers").
func TestReplacedCertDropsPast(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		d := loneServer(t)
		defer d.Close()
		k := loneServer(t)
		defer k.Close()
		keys := newCertKeys(t, 5)
		k1, k2, x, d2, d3 := keys[0], keys[1], keys[2], keys[3], keys[4]
		dk := certKey{d.ID(), d.priv}
		kk := certKey{k.ID(), k.priv}
		all := []certKey{dk, kk, k1, k2, x, d2, d3}
		for _, s := range []*Server{d, k} {
			for _, c := range all {
				if c.id != s.ID() {
					s.roster.saw(c.id, "k", nil)
				}
			}
		}
		sorted := func(ks []certKey) []certKey {
			ids := make([]peer.ID, len(ks))
			for i, c := range ks {
				ids[i] = c.id
			}
			sortChain(ids)
			out := make([]certKey, len(ks))
			for i, id := range ids {
				for _, c := range ks {
					if c.id == id {
						out[i] = c
					}
				}
			}
			return out
		}
		G := sorted(all)
		gids := make([]peer.ID, len(G))
		for i, c := range G {
			gids[i] = c.id
		}
		// N such that N's leader in G is one of K, k1, k2 (not a voter).
		var N uint64
		for n := uint64(6); ; n++ {
			l := G[n%uint64(len(G))].id
			if l == k.ID() || l == k1.id || l == k2.id {
				N = n
				break
			}
		}
		prev := &wire.Cert{Kind: wire.CertFinal, Number: N - 1, Epoch: [32]byte{5}, Chain: proto.ChainIDs(gids)}
		d.cert.Keep(prev)
		k.cert.Keep(prev)

		// D's side: timeout of N over G by D, d2, d3, x.
		tchain := proto.ChainIDs(gids)
		timeout := &wire.Cert{Kind: wire.CertTimeout, Number: N, Chain: tchain}
		for i, c := range G {
			if c.id == d.ID() || c.id == d2.id || c.id == d3.id || c.id == x.id {
				timeout.Sigs = append(timeout.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, c, proto.TimeoutDigest(N, tchain))})
			}
		}
		if err := d.cert.Check(timeout); err != nil {
			t.Fatalf("timeout of N at D: %v", err)
		}
		d.cert.Add(timeout)
		dChain := sorted([]certKey{dk, d2, d3, x})
		n1D := finalCertOf(t, dChain, dChain, N+1, [32]byte{7})
		if err := d.cert.Check(n1D); err != nil {
			t.Fatalf("D's N+1 at D: %v", err)
		}
		d.cert.Add(n1D)
		n2D := finalCertOf(t, dChain, dChain, N+2, [32]byte{6})
		if err := d.cert.Check(n2D); err != nil {
			t.Fatalf("D's N+2 at D: %v", err)
		}
		d.cert.Add(n2D)

		// K's side: N goes final over {K,k1,k2,x}.
		kChain := sorted([]certKey{kk, k1, k2, x})
		finalN := finalCertOf(t, kChain, kChain, N, [32]byte{9})
		if err := k.cert.Check(finalN); err != nil {
			t.Fatalf("final of N at K: %v", err)
		}
		k.cert.Add(finalN)
		// It is pushed to D (from K).
		if _, _, err := d.cert.OnCertPush(k.ID(), finalN.Marshal()); err != nil {
			t.Fatalf("final of N pushed to D: %v", err)
		}
		if c, _ := d.cert.Of(N); c.Kind != wire.CertFinal {
			t.Fatalf("D keeps %s of N", certs.KindName(c.Kind))
		}
		for _, n := range []uint64{N + 1, N + 2} {
			if _, ok := d.cert.Of(n); ok {
				t.Fatalf("D keeps its certificate of %d past the replaced N=%d", n, N)
			}
			if _, err := os.Stat(filepath.Join(d.cfg.DataDir, CertDir, strconv.FormatUint(n, 10))); err == nil {
				t.Fatalf("D's file of %d stays", n)
			}
		}
		if top := d.cert.Top(); top != N {
			t.Fatalf("D's top %d, want N=%d", top, N)
		}
		// Nor is it taken again, made or shown (checked against the old group).
		if d.cert.Keep(n1D) {
			t.Fatalf("D kept its N+1 over the old group again")
		}
		if _, _, err := d.cert.OnCertPush(k.ID(), n1D.Marshal()); err == nil {
			t.Fatalf("D took its N+1 over the old group from a push")
		}
		// D's N+1 pushed to K: refused.
		_, _, err := k.cert.OnCertPush(d.ID(), n1D.Marshal())
		t.Logf("K takes D's N+1? err=%v", err)
		if _, ok := k.cert.Of(N + 1); ok {
			t.Fatalf("K took D's N+1")
		}
		// K's group certifies its own N+1 over {K,k1,k2}.
		kChain1 := sorted([]certKey{kk, k1, k2})
		n1K := finalCertOf(t, kChain1, kChain1, N+1, [32]byte{8})
		if err := k.cert.Check(n1K); err != nil {
			t.Fatalf("K's N+1 at K: %v", err)
		}
		k.cert.Add(n1K)
		if _, _, err := d.cert.OnCertPush(k.ID(), n1K.Marshal()); err != nil {
			t.Fatalf("D refuses K's N+1: %v", err)
		}
		cd, ok := d.cert.Of(N + 1)
		if !ok {
			t.Fatalf("D holds no N+1")
		}
		ck, _ := k.cert.Of(N + 1)
		if cd.Epoch != ck.Epoch {
			t.Errorf("FORK: N+1 at D is epoch %x over %d servers, at K epoch %x over %d servers; both final, N final at both", cd.Epoch[:1], len(cd.Chain), ck.Epoch[:1], len(ck.Chain))
		}
	})
}
