package node

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/window"
)

// certKey is a server identity a test signs with.
type certKey struct {
	id   peer.ID
	priv crypto.PrivKey
}

func newCertKeys(t *testing.T, n int) []certKey {
	t.Helper()
	out := make([]certKey, n)
	for i := range out {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = certKey{id, k}
	}
	ids := make([]peer.ID, n)
	for i := range out {
		ids[i] = out[i].id
	}
	sortChain(ids)
	sorted := make([]certKey, n)
	for i, id := range ids {
		for _, k := range out {
			if k.id == id {
				sorted[i] = k
			}
		}
	}
	return sorted
}

func certSign(t *testing.T, k certKey, dg [32]byte) [64]byte {
	t.Helper()
	sig, err := proto.Sign(k.priv, dg)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// finalCertBy is a final certificate of number n signed by keys at
// positions of a chain of keys.
func finalCertBy(t *testing.T, chain []certKey, signers []certKey, n uint64) *wire.Cert {
	return finalCertOf(t, chain, signers, n, [32]byte{1})
}

// finalCertOf is finalCertBy naming epoch.
func finalCertOf(t *testing.T, chain []certKey, signers []certKey, n uint64, epoch [32]byte) *wire.Cert {
	c := &wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: epoch, Digest: [32]byte{2}}
	for _, k := range chain {
		c.Chain = append(c.Chain, []byte(k.id))
	}
	for i := range chain {
		c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, signers[i], proto.FinalCertDigest(n, c.Epoch, c.Digest, nil))})
	}
	return c
}

// TestCertForged: a certificate is taken only with the signatures its kind
// needs, each by its chain position's key, from a chain most of whose
// servers are known here. Forged, wrongly signed, relabelled or
// under-signed certificates are refused, by verifyCert and by a Prepare
// that carries one (which then leaves nothing behind), and the valid ones
// of each kind pass. A Prepare past a timeout whose gap (§6.3 v3) holds a
// forged certificate, or is left out, is refused too.
func TestCertForged(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		keys := newCertKeys(t, 3) // known: in the roster
		for _, k := range keys {
			s.roster.saw(k.id, "k", nil)
		}
		strangers := newCertKeys(t, 3) // never seen here
		known := s.cert.Known()

		// Final: every chain server's signature.
		if err := proto.VerifyCert(finalCertBy(t, keys, keys, 5), known); err != nil {
			t.Fatalf("valid final certificate: %v", err)
		}
		wrong := append([]certKey{}, keys...)
		wrong[1] = strangers[0]
		if err := proto.VerifyCert(finalCertBy(t, keys, wrong, 5), known); err == nil {
			t.Error("a final certificate with a signature by the wrong key verified")
		}
		if err := proto.VerifyCert(finalCertBy(t, strangers, strangers, 5), known); err == nil || !strings.Contains(err.Error(), "known here") {
			t.Errorf("a final certificate of unknown servers: %v", err)
		}
		chain := []certKey{keys[0], strangers[1], strangers[2]}
		sortKeys(chain)
		if err := proto.VerifyCert(finalCertBy(t, chain, chain, 5), known); err == nil {
			t.Error("a final certificate with one known server of three verified")
		}
		relabel := finalCertBy(t, keys, keys, 5)
		relabel.Number = 6
		if err := proto.VerifyCert(relabel, known); err == nil {
			t.Error("a final certificate relabelled to another number verified")
		}
		short := finalCertBy(t, keys, keys, 5)
		short.Sigs = short.Sigs[:2]
		if err := proto.VerifyCert(short, known); err == nil {
			t.Error("a final certificate missing a signature verified")
		}

		// Timeout: more than half of the servers other than the leader.
		timeoutOf := func(n uint64, signers ...int) *wire.Cert {
			c := &wire.Cert{Kind: wire.CertTimeout, Number: n}
			for _, k := range keys {
				c.Chain = append(c.Chain, []byte(k.id))
			}
			for _, i := range signers {
				c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, keys[i], proto.TimeoutDigest(n, c.Chain))})
			}
			return c
		}
		notLeading := func(n uint64) []int {
			var out []int
			for i := range keys {
				if uint64(i) != n%3 {
					out = append(out, i)
				}
			}
			return out
		}
		const n = 7
		others := notLeading(n)
		if err := proto.VerifyCert(timeoutOf(n, others...), known); err != nil {
			t.Fatalf("timeout signed by both servers other than the leader: %v", err)
		}
		if err := proto.VerifyCert(timeoutOf(n, others[0]), known); err == nil {
			t.Error("a timeout signed by one server of three verified")
		}
		withLeader := []int{others[0], n % 3}
		if withLeader[1] < withLeader[0] {
			withLeader[0], withLeader[1] = withLeader[1], withLeader[0]
		}
		// The leader's signature counts as any other's
		// (TestLateLeaderTimedOut).
		if err := proto.VerifyCert(timeoutOf(n, withLeader...), known); err != nil {
			t.Errorf("a timeout the leader and one other signed: %v", err)
		}
		other := timeoutOf(n, others...)
		other.Number = n + 1
		if err := proto.VerifyCert(other, known); err == nil {
			t.Error("a timeout relabelled to another number verified")
		}

		// Abort: every server's open signature and a chain server's abort.
		abortCert := func(by certKey, epoch [32]byte) *wire.Cert {
			id := [32]byte{9}
			c := &wire.Cert{Kind: wire.CertAbort, Number: 5, Epoch: id}
			for i, k := range keys {
				c.Chain = append(c.Chain, []byte(k.id))
				c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, k, proto.OpenCertDigest(5, id, nil))})
			}
			a := wire.Abort{Epoch: epoch, Number: 5, Kind: wire.AbortCoord, Signer: []byte(by.id), Reason: []byte("open failed")}
			a.Sig = certSign(t, by, proto.AbortDigest(&a))
			c.Abort = a.Marshal()
			return c
		}
		if err := proto.VerifyCert(abortCert(keys[1], [32]byte{9}), known); err != nil {
			t.Fatalf("valid abort certificate: %v", err)
		}
		if err := proto.VerifyCert(abortCert(strangers[0], [32]byte{9}), known); err == nil {
			t.Error("an abort certificate whose abort is signed outside the chain verified")
		}
		if err := proto.VerifyCert(abortCert(keys[1], [32]byte{8}), known); err == nil {
			t.Error("an abort certificate holding another epoch's abort verified")
		}

		// A Prepare of N from its leader in s's group chain, with a forged
		// certificate of N−1: refused, nothing prepared, no number moved.
		group := []peer.ID{s.ID(), keys[0].id, keys[1].id, keys[2].id}
		sortChain(group)
		N := uint64(6)
		for proto.LeaderOf(N, group) == s.ID() {
			N++
		}
		leader := proto.LeaderOf(N, group)
		prep := func(prev *wire.Cert, gap ...wire.Cert) []byte {
			p := wire.Prepare{Number: N, Params: s.cfg.Params.Wire(), Previous: *prev, Gap: gap}
			for _, id := range group {
				p.Chain = append(p.Chain, []byte(id))
			}
			return p.Marshal()
		}
		relabelled := finalCertBy(t, keys, keys, N-2)
		relabelled.Number = N - 1
		forged := []*wire.Cert{
			finalCertBy(t, keys, wrong, N-1),
			finalCertBy(t, strangers, strangers, N-1),
			relabelled,
			timeoutOf(N-1, notLeading(N - 1)[0]),
			{},
		}
		for i, c := range forged {
			if _, _, err := s.onPrepare(leader, prep(c)); err == nil {
				t.Errorf("forged certificate %d: Prepare accepted", i)
			}
		}
		s.mu.Lock()
		held, last := len(s.prep), s.number
		s.mu.Unlock()
		if held != 0 || last != 0 || s.cert.Top() != 0 {
			t.Fatalf("forged certificates left %d preparations, number %d, certified %d", held, last, s.cert.Top())
		}
		// Past a timeout, the gap (§6.3 v3): N − 2's certificate, checked
		// as the previous one is.
		if _, _, err := s.onPrepare(leader, prep(timeoutOf(N-1, notLeading(N-1)...), *finalCertBy(t, keys, wrong, N-2))); err == nil || !strings.Contains(err.Error(), "gap") {
			t.Errorf("a gap with a forged certificate: %v", err)
		}
		if _, _, err := s.onPrepare(leader, prep(timeoutOf(N-1, notLeading(N-1)...))); err == nil || !strings.Contains(err.Error(), "gap") {
			t.Errorf("a timeout without its gap: %v", err)
		}
		if _, _, err := s.onPrepare(leader, prep(timeoutOf(N-1, notLeading(N-1)...), *finalCertOf(t, keys, keys, N-2, heldEpoch(t, s, N-2)))); err != nil {
			t.Fatalf("Prepare with a valid certificate: %v", err)
		}
		if s.cert.Top() != N-1 || s.lastNumber() != N-1 {
			t.Fatalf("a valid certificate of %d: certified %d, number %d", N-1, s.cert.Top(), s.lastNumber())
		}
		// The number is certified here now; a forged certificate of it is
		// still refused (it would go into the descriptor).
		if _, _, err := s.onPrepare(leader, prep(timeoutOf(N-1, notLeading(N - 1)[0]))); err == nil {
			t.Error("a forged certificate of a number certified here: Prepare accepted")
		}
	})
}

func sortKeys(ks []certKey) {
	ids := make([]peer.ID, len(ks))
	for i := range ks {
		ids[i] = ks[i].id
	}
	sortChain(ids)
	out := make([]certKey, len(ks))
	for i, id := range ids {
		for _, k := range ks {
			if k.id == id {
				out[i] = k
			}
		}
	}
	copy(ks, out)
}

// TestTimeoutVotes: a server makes a timeout certificate from roster
// servers' votes once more than half of the servers other than the
// number's leader signed, and not before; a vote by the leader, one sent by
// another than its signer and one for a number already certified are not
// counted, and a hostile voter that signs many chains keeps one vote and
// does not crowd out the others'.
func TestTimeoutVotes(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		keys := newCertKeys(t, 5)
		for _, k := range keys {
			s.roster.saw(k.id, "k", nil)
		}
		chain := make([][]byte, len(keys))
		for i, k := range keys {
			chain[i] = []byte(k.id)
		}
		const n = 1
		lead := n % len(keys)
		vote := func(i int, ch [][]byte) []byte {
			pos := -1
			for j, p := range ch {
				if string(p) == string(keys[i].id) {
					pos = j
				}
			}
			v := wire.Cert{Kind: wire.CertTimeout, Number: n, Chain: ch, Sigs: []wire.CertSig{{Index: uint16(pos), Sig: certSign(t, keys[i], proto.TimeoutDigest(n, ch))}}}
			return v.Marshal()
		}
		var others []int
		for i := range keys {
			if i != lead {
				others = append(others, i)
			}
		}
		// (The leader's own vote counts as any other's: internal/certs
		// TestTimeoutVotes.)
		if _, _, err := s.cert.OnTimeoutVote(keys[others[1]].id, vote(others[0], chain)); err == nil {
			t.Error("a vote sent by another than its signer taken")
		}
		// A hostile voter signs many chains (itself and made-up servers).
		hostile := others[0]
		for range 10 {
			fake := newCertKeys(t, 2)
			ch := [][]byte{[]byte(keys[hostile].id), []byte(fake[0].id), []byte(fake[1].id)}
			sortChainBytes(ch)
			// (refused where it would lead its made-up chain)
			_, _, _ = s.cert.OnTimeoutVote(keys[hostile].id, vote(hostile, ch))
		}
		// Quorum of 5: ⌊4/2⌋ + 1 = 3 of the four others.
		for i, o := range others[1:3] {
			if _, _, err := s.cert.OnTimeoutVote(keys[o].id, vote(o, chain)); err != nil {
				t.Fatal(err)
			}
			if i == 0 && s.cert.Top() != 0 {
				t.Fatal("certified with one vote")
			}
		}
		if s.cert.Top() != 0 {
			t.Fatal("certified with two votes of the chain (the hostile one voted other chains)")
		}
		if _, _, err := s.cert.OnTimeoutVote(keys[hostile].id, vote(hostile, chain)); err != nil {
			t.Fatal(err)
		}
		if s.cert.Top() != n || s.CertKind(n) != wire.CertTimeout || s.lastNumber() != n {
			t.Fatalf("after three votes: certified %d (kind %d), number %d", s.cert.Top(), s.CertKind(n), s.lastNumber())
		}
		c, _ := s.cert.Of(n)
		if err := proto.VerifyCert(c, s.cert.Known()); err != nil || len(c.Sigs) != 3 {
			t.Fatalf("the timeout certificate made: %v, %d signatures", err, len(c.Sigs))
		}
	})
}

func sortChainBytes(ch [][]byte) {
	ids := make([]peer.ID, len(ch))
	for i := range ch {
		ids[i] = peer.ID(ch[i])
	}
	sortChain(ids)
	for i := range ids {
		ch[i] = []byte(ids[i])
	}
}

// loneServer starts one server in the test's network with no peers (a
// chain of two at the least), for tests that feed it messages by hand.
// heldEpoch is a made-up epoch of number n whose descriptor s holds, with
// no previous certificate: a Prepare's walk back (§6.3 v3), which must
// reach the budgets' depth, ends there.
func heldEpoch(t *testing.T, s *Server, n uint64) [32]byte {
	t.Helper()
	d := &wire.Descriptor{Number: n, Params: testParams(2).Wire()}
	id := proto.EpochID(d)
	s.win.Keep([]wire.WindowItem{{Number: n, Epoch: id, Group: window.GroupBytes(d)}})
	return id
}

func loneServer(t *testing.T) *Server {
	t.Helper()
	s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Store: NewMemStore(), MinServers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
