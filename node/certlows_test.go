//go:build riffletest

package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestAbortTimeoutPrepares (§3's admitted gap): one server holds an abort
// certificate of N−1, another a timeout one (the open descriptor reached
// one server only). Before precedence each refused the other's Prepare of
// N for good. Now the one holding the timeout takes the abort certificate
// from the Prepare and accepts it as its previous one; the one holding the
// abort refuses a Prepare carrying the timeout, once, and sends its
// certificate back (outrankedFrom), after which that leader carries the
// abort one too.
func TestAbortTimeoutPrepares(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		keys := newCertKeys(t, 3)
		founders := map[peer.ID]bool{}
		chain := make([][]byte, len(keys))
		for i, k := range keys {
			founders[k.id] = true
			chain[i] = []byte(k.id)
		}
		id := [32]byte{7}
		coord := wire.Abort{Epoch: id, Number: 1, Kind: wire.AbortCoord, Signer: chain[1], Reason: []byte("open failed")}
		coord.Sig = certSign(t, keys[1], proto.AbortDigest(&coord))
		abort := &wire.Cert{Kind: wire.CertAbort, Number: 1, Epoch: id, Chain: chain, Abort: coord.Marshal()}
		timeout := &wire.Cert{Kind: wire.CertTimeout, Number: 1, Chain: chain}
		for i, k := range keys {
			abort.Sigs = append(abort.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, k, proto.OpenCertDigest(1, id, nil))})
			if i != int(1%uint64(len(keys))) {
				timeout.Sigs = append(timeout.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, k, proto.TimeoutDigest(1, chain))})
			}
		}
		server := func(held *wire.Cert) *Server {
			s := loneServer(t)
			s.who.SetFounders(founders)
			if err := s.cert.Check(held); err != nil {
				t.Fatalf("%s certificate: %v", certs.KindName(held.Kind), err)
			}
			s.cert.Add(held)
			return s
		}
		// The timeout's holder takes the abort one from the Prepare.
		a := server(timeout)
		a.cert.TakeOutranking(abort)
		if err := a.cert.CheckPrevious(2, abort); err != nil {
			t.Errorf("a Prepare of 2 carrying the abort certificate refused where the timeout one was held: %v", err)
		}
		if c, _ := a.cert.Of(1); c.Kind != wire.CertAbort {
			t.Errorf("the timeout's holder keeps the %s certificate of 1", certs.KindName(c.Kind))
		}
		a.Close()
		// The abort's holder refuses the timeout one and sends its own.
		b := server(abort)
		var pushed atomic.Bool
		b.hooks.Store(&serverHooks{hideCerts: func() bool { pushed.Store(true); return false }})
		if err := b.cert.OutrankedFrom(timeout, keys[0].id); err == nil {
			t.Error("a Prepare of 2 carrying the timeout certificate taken where the abort one is held")
		}
		if !pushed.Load() {
			t.Error("the abort's holder did not send its certificate back")
		}
		if c, _ := b.cert.Of(1); c.Kind != wire.CertAbort {
			t.Errorf("the abort's holder now keeps the %s certificate of 1", certs.KindName(c.Kind))
		}
		b.Close()
	})
}

// TestForgedVoteAheadPokesNothing: a roster server's timeout vote for a
// number past this server's next, with a forged signature, no longer
// pokes the certificate sync (before, every such vote cost a catch-up
// round of requests); a signed one does.
func TestForgedVoteAheadPokesNothing(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		keys := newCertKeys(t, 3)
		chain := make([][]byte, len(keys))
		for i, k := range keys {
			s.roster.saw(k.id, "k", nil)
			chain[i] = []byte(k.id)
		}
		var pokes atomic.Int32
		s.hooks.Store(&serverHooks{syncPoked: func() { pokes.Add(1) }})
		vote := func(sig [64]byte) []byte {
			return (&wire.Cert{Kind: wire.CertTimeout, Number: 9, Chain: chain, Sigs: []wire.CertSig{{Index: 0, Sig: sig}}}).Marshal()
		}
		if _, _, err := s.cert.OnTimeoutVote(keys[0].id, vote([64]byte{1})); err != nil {
			t.Fatal(err)
		}
		if n := pokes.Load(); n != 0 {
			t.Errorf("a forged vote ahead poked the sync %d times", n)
		}
		if _, _, err := s.cert.OnTimeoutVote(keys[0].id, vote(certSign(t, keys[0], proto.TimeoutDigest(9, chain)))); err != nil {
			t.Fatal(err)
		}
		if n := pokes.Load(); n != 1 {
			t.Errorf("a signed vote ahead poked the sync %d times, want 1", n)
		}
	})
}

// TestEquivocationGrindWritesOnce: a server that signed a final
// descriptor signs timeouts of its number over ever other chains, each
// its equivocation, sent in the order of their evidence keys, largest
// first. Before, each replaced the one record of its signer and epoch
// (the smallest key), so the refusals file was rewritten once a piece of
// evidence; now the first record stays, the file is written once, and
// the signer is charged once.
func TestEquivocationGrindWritesOnce(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		keys := newCertKeys(t, 3)
		const K = 4
		final := finalCertBy(t, keys, keys, K)
		s.cert.Keep(final)
		ctx, err := blame.CertContext(final)
		if err != nil {
			t.Fatal(err)
		}
		bad := keys[1]
		var evs []*wire.Charge
		for i := range 20 {
			tc := [][]byte{[]byte(bad.id), append([]byte(bad.id), byte(i))}
			t0 := &wire.Cert{Kind: wire.CertTimeout, Number: K, Chain: tc, Sigs: []wire.CertSig{{Index: 0, Sig: certSign(t, bad, proto.TimeoutDigest(K, tc))}}}
			evs = append(evs, chargelog.Equivocation(final, 1, t0, 0))
		}
		sort.Slice(evs, func(i, j int) bool { return blame.ChargeKey(evs[i]) > blame.ChargeKey(evs[j]) })
		file := filepath.Join(s.cfg.DataDir, RefusalFile)
		var first []byte
		writes := 0
		for i, ev := range evs {
			if _, err := s.ref.LogCharge(ev, ctx); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(file)
			if i == 0 {
				first = b
			} else if !bytes.Equal(b, first) {
				writes++
				first = b
			}
		}
		if writes != 0 {
			t.Errorf("the refusals file rewritten %d times by 19 more equivocations of one signer and epoch", writes)
		}
		if n := s.ref.RefusalCounts()[bad.id]; n != 1 {
			t.Errorf("the equivocator counted %d times, want 1", n)
		}
	})
}

// TestForgedOutrankingFromNonLeader: a Prepare's previous certificate that
// outranks the one held here has its signatures checked only when its
// sender leads the number in the chain derived from it. Before, any chain
// server's Prepare carrying a forged final certificate cost its m
// signature checks before the leader check refused it.
func TestForgedOutrankingFromNonLeader(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		keys := newCertKeys(t, 3)
		chain := make([][]byte, len(keys))
		for i, k := range keys {
			s.roster.saw(k.id, "k", nil)
			chain[i] = []byte(k.id)
		}
		var checked atomic.Int32
		s.hooks.Store(&serverHooks{certChecked: func(*wire.Cert) { checked.Add(1) }})
		for K := uint64(4); K < 12; K++ {
			s.cert.Keep(&wire.Cert{Kind: wire.CertTimeout, Number: K, Chain: chain})
			if c, _ := s.cert.Of(K); c == nil {
				// Refused at storage: it does not fit the group of
				// the certificate below (certs_past.go).
				continue
			}
			forged := &wire.Cert{Kind: wire.CertFinal, Number: K, Epoch: [32]byte{9}, Digest: [32]byte{9}, Chain: chain}
			for i := range chain {
				forged.Sigs = append(forged.Sigs, wire.CertSig{Index: uint16(i), Sig: [64]byte{byte(i)}})
			}
			mine := s.derivedChain(forged)
			lead := proto.LeaderOf(K+1, mine)
			if lead == s.ID() || len(mine) < s.cfg.MinServers {
				continue
			}
			var other peer.ID
			for _, k := range keys {
				if k.id != lead {
					other = k.id
				}
			}
			checked.Store(0)
			s.cert.TakeOutrankingFrom(K+1, forged, other)
			if n := checked.Load(); n != 0 {
				t.Errorf("number %d: a forged outranking certificate from a server that does not lead it checked %d times", K+1, n)
			}
			s.cert.TakeOutrankingFrom(K+1, forged, lead)
			if n := checked.Load(); n != 1 {
				t.Errorf("number %d: one from its leader checked %d times, want 1", K+1, n)
			}
			if c, _ := s.cert.Of(K); c.Kind != wire.CertTimeout {
				t.Errorf("number %d: the forged certificate was taken", K)
			}
			return
		}
		t.Fatal("no number led by another server here")
	})
}

// TestTimeoutLenderPushed: a corrupt server X of epoch N's chain lends its
// timeout vote of N to an honest server D of the group outside that chain
// while N runs: D certifies N by timeout and goes past N, while the
// chain's servers certify N by its final descriptor. The chain's servers
// send the final certificate they made to the group (pushCert): D takes
// it over its timeout one past N (onCertPush) and charges X for its two
// signatures of N. Before, D kept the timeout certificate for good (no
// push, and its sync asked from its last number), charging nobody for N
// while the chain's servers charged X.
func TestTimeoutLenderPushed(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		d := loneServer(t)
		defer d.Close()
		keys := newCertKeys(t, 3)
		for _, k := range keys {
			d.roster.saw(k.id, "k", nil)
		}
		group := []peer.ID{d.ID()}
		for _, k := range keys {
			group = append(group, k.id)
		}
		sortChain(group)
		const N = 6
		d.cert.Keep(&wire.Cert{Kind: wire.CertFinal, Number: N - 1, Epoch: [32]byte{5}, Chain: proto.ChainIDs(group)})
		final := finalCertBy(t, keys, keys, N)
		x := keys[1]
		tchain := proto.ChainIDs(group)
		timeout := &wire.Cert{Kind: wire.CertTimeout, Number: N, Chain: tchain}
		for i, p := range group {
			switch p {
			case d.ID():
				sig, err := proto.Sign(d.priv, proto.TimeoutDigest(N, tchain))
				if err != nil {
					t.Fatal(err)
				}
				timeout.Sigs = append(timeout.Sigs, wire.CertSig{Index: uint16(i), Sig: sig})
			case x.id:
				timeout.Sigs = append(timeout.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, x, proto.TimeoutDigest(N, tchain))})
			}
		}
		d.cert.Keep(timeout)
		d.cert.Keep(&wire.Cert{Kind: wire.CertTimeout, Number: N + 1, Chain: tchain})
		if _, _, err := d.cert.OnCertPush(keys[0].id, final.Marshal()); err != nil {
			t.Fatalf("the final certificate of %d pushed: %v", N, err)
		}
		if c, _ := d.cert.Of(N); c.Kind != wire.CertFinal {
			t.Fatalf("D past %d keeps the %s certificate of it", N, certs.KindName(c.Kind))
		}
		if err := wait.Until(context.Background(), time.Minute, func() bool { return d.ref.RefusalCounts()[x.id] == 1 }); err != nil {
			t.Errorf("the lender counted %d times at D, want 1", d.ref.RefusalCounts()[x.id])
		}
		if n := d.ref.RefusalCounts()[d.ID()]; n != 0 {
			t.Errorf("D charged itself %d times", n)
		}
	})
}
