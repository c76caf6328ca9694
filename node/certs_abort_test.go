package node

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/window"
)

// TestAbortAfterFinalRefused (issue 26, F3): any member of a final
// epoch K's chain holds every open signature of K and can add an abort of
// its own (AbortNoClose): a certificate that verifies. As leader of K+1 it
// carried it as the previous certificate (or in the gap past a timeout of
// K+1), so K could never be pinned again (only a final certificate pins a
// record), and clients charged K's leader. A member that keeps K's final
// certificate now refuses such an abort, as the previous certificate and
// in a gap; before, both verified and were taken. An abort of a number
// not final here still is.
func TestAbortAfterFinalRefused(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		keys := newCertKeys(t, 3)
		for _, k := range keys {
			s.roster.saw(k.id, "k", nil)
		}
		known := s.cert.Known()
		const K = 5
		// Abort of K (epoch {1}, the final certificate's) by keys[1], a
		// member that is not K's leader, over every open signature.
		abortOf := func(n uint64) *wire.Cert {
			id := [32]byte{1}
			c := &wire.Cert{Kind: wire.CertAbort, Number: n, Epoch: id}
			for i, k := range keys {
				c.Chain = append(c.Chain, []byte(k.id))
				c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, k, proto.OpenCertDigest(n, id, nil))})
			}
			a := wire.Abort{Epoch: id, Number: n, Kind: wire.AbortNoClose, Signer: []byte(keys[1].id), Reason: []byte("no close")}
			a.Sig = certSign(t, keys[1], proto.AbortDigest(&a))
			c.Abort = a.Marshal()
			return c
		}
		final := finalCertBy(t, keys, keys, K)
		if err := proto.VerifyCert(final, known); err != nil {
			t.Fatal(err)
		}
		forged := abortOf(K)
		if err := proto.VerifyCert(forged, known); err != nil {
			t.Fatalf("the member's abort of K does not verify: %v", err)
		}
		s.cert.Add(final)
		if err := s.cert.CheckPrevious(K+1, forged); err == nil {
			t.Error("an abort of K, final here, taken as the previous certificate of K+1")
		}
		timeout := &wire.Cert{Kind: wire.CertTimeout, Number: K + 1}
		if err := window.CheckGap(&s.cert, K+2, timeout, []wire.Cert{*forged}); err == nil {
			t.Error("an abort of K, final here, taken in the gap of K+2")
		}
		if c, _ := s.cert.Of(K); c.Kind != wire.CertFinal {
			t.Errorf("K's certificate here is of kind %d, want final", c.Kind)
		}
		// A number that is not final here: its abort is taken.
		if err := s.cert.CheckPrevious(K+3, abortOf(K+2)); err != nil {
			t.Errorf("an abort of a number not final here: %v", err)
		}
	})
}
