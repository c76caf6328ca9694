package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestCertOutranks: the rule that decides a number's certificate
// (certOutranks), over every pair of kinds: final over abort over timeout,
// and of one kind the held one stays; a certificate of another number
// never replaces one.
func TestCertOutranks(t *testing.T) {
	kinds := []uint8{wire.CertFinal, wire.CertAbort, wire.CertTimeout}
	// want[i][j]: kinds[i] replaces a held kinds[j].
	want := [3][3]bool{
		{false, true, true},
		{false, false, true},
		{false, false, false},
	}
	for i, a := range kinds {
		for j, b := range kinds {
			c, held := &wire.Cert{Kind: a, Number: 5}, &wire.Cert{Kind: b, Number: 5}
			if got := certs.Outranks(c, held); got != want[i][j] {
				t.Errorf("%s over a held %s: %v, want %v", certs.KindName(a), certs.KindName(b), got, want[i][j])
			}
			if certs.Outranks(&wire.Cert{Kind: a, Number: 6}, held) {
				t.Errorf("%s of 6 replaces the %s of 5", certs.KindName(a), certs.KindName(b))
			}
		}
	}
	// Two timeouts over different chains: the smaller chain, whichever
	// is held.
	lo := &wire.Cert{Kind: wire.CertTimeout, Number: 5, Chain: [][]byte{{1}, {2}}}
	hi := &wire.Cert{Kind: wire.CertTimeout, Number: 5, Chain: [][]byte{{1}, {3}}}
	if !certs.Outranks(lo, hi) || certs.Outranks(hi, lo) || certs.Outranks(lo, lo) {
		t.Errorf("timeouts over chains [1 2] and [1 3]: %v over the other, %v back, %v over itself", certs.Outranks(lo, hi), certs.Outranks(hi, lo), certs.Outranks(lo, lo))
	}
}

// TestCertPrecedenceAnyOrder: a server keeps the same certificate of a
// number whatever order its certificates come in, and once the final one
// replaces an abort one, the number's evidence is charged as where the
// final came first. The leader's coordination abort after its final
// descriptor charges the leader where the number is final, nobody where
// the registration came to nothing (blame.ChargeOf). Before, the first
// certificate of a number stayed: a server that missed the final
// descriptor and certified the number by the leader's abort never charged
// it, while the others did (the swarm's seeds 165 and 167: the servers
// then derived different leaders for the next number, for good).
func TestCertPrecedenceAnyOrder(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		keys := newCertKeys(t, 3)
		const K = 5
		chain := make([]peer.ID, len(keys))
		for i, k := range keys {
			chain[i] = k.id
		}
		id := [32]byte{1}
		lead := proto.LeaderOf(K, chain)
		var leadKey certKey
		for _, k := range keys {
			if k.id == lead {
				leadKey = k
			}
		}
		coord := wire.Abort{Epoch: id, Kind: wire.AbortCoord, Signer: []byte(lead), Reason: []byte("final descriptor not delivered")}
		coord.Sig = certSign(t, leadKey, proto.AbortDigest(&coord))
		abortCert := &wire.Cert{Kind: wire.CertAbort, Number: K, Epoch: id, Abort: coord.Marshal()}
		for i, k := range keys {
			abortCert.Chain = append(abortCert.Chain, []byte(k.id))
			abortCert.Sigs = append(abortCert.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, k, proto.OpenCertDigest(K, id, nil))})
		}
		final := finalCertBy(t, keys, keys, K)
		timeout := &wire.Cert{Kind: wire.CertTimeout, Number: K, Chain: abortCert.Chain}
		cases := []struct {
			name  string
			order []*wire.Cert
			want  uint8
		}{
			{"abort then final", []*wire.Cert{abortCert, final}, wire.CertFinal},
			{"final then abort", []*wire.Cert{final, abortCert}, wire.CertFinal},
			{"timeout then abort", []*wire.Cert{timeout, abortCert}, wire.CertAbort},
			{"abort then timeout", []*wire.Cert{abortCert, timeout}, wire.CertAbort},
			{"timeout then final", []*wire.Cert{timeout, final}, wire.CertFinal},
			{"final then timeout", []*wire.Cert{final, timeout}, wire.CertFinal},
		}
		for _, tc := range cases {
			s := loneServer(t)
			// The coordination abort logged as evidence in the
			// context of the first certificate, as a server logs it
			// when it comes.
			ev := &wire.Charge{Kind: wire.EvAbort, Number: K, Item: coord.Marshal()}
			for i, c := range tc.order {
				s.cert.Keep(c)
				if i == 0 && c.Kind != wire.CertTimeout {
					ctx, err := blame.CertContext(c)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := s.ref.LogCharge(ev, ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, ok := s.cert.Of(K)
			if !ok || got.Kind != tc.want {
				t.Errorf("%s: the certificate of %d here is %s, want %s", tc.name, K, certs.KindName(got.Kind), certs.KindName(tc.want))
			}
			n := s.ref.RefusalCounts()[lead]
			if tc.want == wire.CertFinal && tc.order[0].Kind != wire.CertTimeout && n != 1 {
				t.Errorf("%s: the leader's abort after its final counted %d times, want 1", tc.name, n)
			}
			if tc.want == wire.CertAbort && n != 0 {
				t.Errorf("%s: the leader's abort of an epoch not final counted %d times, want 0", tc.name, n)
			}
			s.Close()
		}
	})
}

// TestRejudgeRace: evidence logged in the background (noteChargeLocked)
// with the context it read before the number's certificate changed must
// not keep that context: (1) the leader's coordination abort judged under
// the abort certificate of K and written after the final certificate
// replaced it and rejudge ran; (2) judged under the epoch's own context
// (no certificate of K yet, final descriptor not here) and written before
// the final certificate came first. Before, both left the abort charged
// to nobody while every server holding the final certificate charges the
// leader; now logCharge judges again under the certificate held when it
// writes, and the first certificate of a number rejudges its evidence.
func TestRejudgeRace(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		keys := newCertKeys(t, 3)
		const K = 5
		chain := make([]peer.ID, len(keys))
		for i, k := range keys {
			chain[i] = k.id
		}
		id := [32]byte{1}
		lead := proto.LeaderOf(K, chain)
		var leadKey certKey
		for _, k := range keys {
			if k.id == lead {
				leadKey = k
			}
		}
		coord := wire.Abort{Epoch: id, Kind: wire.AbortCoord, Signer: []byte(lead), Reason: []byte("final descriptor not delivered")}
		coord.Sig = certSign(t, leadKey, proto.AbortDigest(&coord))
		abortCert := &wire.Cert{Kind: wire.CertAbort, Number: K, Epoch: id, Abort: coord.Marshal()}
		for i, k := range keys {
			abortCert.Chain = append(abortCert.Chain, []byte(k.id))
			abortCert.Sigs = append(abortCert.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, k, proto.OpenCertDigest(K, id, nil))})
		}
		final := finalCertBy(t, keys, keys, K)
		ev := func() *wire.Charge { return &wire.Charge{Kind: wire.EvAbort, Number: K, Item: coord.Marshal()} }

		s := loneServer(t)
		s.cert.Keep(abortCert)
		stale, err := blame.CertContext(abortCert)
		if err != nil {
			t.Fatal(err)
		}
		s.cert.Keep(final)
		if _, err := s.ref.LogCharge(ev(), stale); err != nil {
			t.Fatal(err)
		}
		if n := s.ref.RefusalCounts()[lead]; n != 1 {
			t.Errorf("judged under the replaced abort certificate: the leader counted %d times, want 1", n)
		}
		s.Close()

		s = loneServer(t)
		own := blame.Context{Epoch: id, Chain: chain}
		if _, err := s.ref.LogCharge(ev(), own); err != nil {
			t.Fatal(err)
		}
		s.cert.Keep(final)
		if n := s.ref.RefusalCounts()[lead]; n != 1 {
			t.Errorf("judged under the epoch's own context before its first certificate: the leader counted %d times, want 1", n)
		}
		s.Close()
	})
}
