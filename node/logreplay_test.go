package node

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestLogReplayAgrees (§3 "The control-plane log"): two servers fed the
// same signed entries of the log (the final certificates of numbers 1 to
// 8, over a chain of four, and three signed fault aborts: X's of numbers
// 4 and 5, which leave X out of numbers 6 to 9, and Y's of 7) in
// different orders and at different times of arrival reach the same
// charges and the same chain for number 9. Server A takes the
// certificates first, then the aborts; server B the aborts first, in the
// reverse order, then the certificates out of order, and B has signed an
// open descriptor of 9 already (its own number is 9, A's 8). Before, B
// dropped every abort whose certificate it did not hold yet (counts
// {} against A's {X: 2, Y: 1}), and once it held them it counted the
// budget from its own number, not from the number decided: X was out of
// 9's chain at A and not at B, which then derived another chain and
// another leader for 9.
func TestLogReplayAgrees(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		a, b := loneServer(t), loneServer(t)
		defer a.Close()
		defer b.Close()
		xKey, x := replayKey(t)
		yKey, y := replayKey(t)
		ids := []peer.ID{a.ID(), b.ID(), x, y}
		sortChain(ids)
		cert := func(n uint64) *wire.Cert {
			return &wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: replayEpoch(n), Chain: proto.ChainIDs(ids)}
		}
		evs := []*wire.Charge{replayAbort(t, xKey, 4), replayAbort(t, xKey, 5), replayAbort(t, yKey, 7)}
		for _, s := range []*Server{a, b} {
			for _, p := range ids {
				if p != s.ID() {
					s.roster.saw(p, "", nil)
				}
			}
		}
		b.mu.Lock()
		b.number = 9 // B signed the open descriptor of 9
		b.mu.Unlock()

		// A: the certificates, then the aborts a second apart.
		for n := uint64(1); n <= 8; n++ {
			a.cert.Keep(cert(n))
		}
		for _, ev := range evs {
			time.Sleep(time.Second)
			if _, _, err := a.evs().OnCharge(b.ID(), ev.Marshal()); err != nil {
				t.Fatalf("A refused the evidence of %d: %v", ev.Number, err)
			}
		}
		// B: the first three certificates, the aborts in the reverse
		// order, then the other certificates out of order, later.
		for n := uint64(1); n <= 3; n++ {
			b.cert.Keep(cert(n))
		}
		for _, ev := range slices.Backward(evs) {
			if _, _, err := b.evs().OnCharge(a.ID(), ev.Marshal()); err != nil {
				t.Fatalf("B refused the evidence of %d: %v", ev.Number, err)
			}
			time.Sleep(300 * time.Millisecond)
		}
		time.Sleep(5 * time.Second)
		for _, n := range []uint64{8, 5, 4, 7, 6} {
			b.cert.Keep(cert(n))
			time.Sleep(100 * time.Millisecond)
		}
		for _, s := range []*Server{a, b} {
			for _, p := range ids {
				if p != s.ID() {
					s.roster.saw(p, "", nil)
				}
			}
		}

		name := map[peer.ID]string{a.ID(): "A", b.ID(): "B", x: "X", y: "Y"}
		counts := func(s *Server) map[string]int {
			out := map[string]int{}
			for p, c := range s.ref.RefusalCounts() {
				out[name[p]] = c
			}
			return out
		}
		outs := func(s *Server) []string {
			var out []string
			for _, p := range ids {
				if s.refusalOut(p) {
					out = append(out, name[p])
				}
			}
			slices.Sort(out)
			return out
		}
		chain := func(s *Server) []string {
			c, _ := s.cert.Of(8)
			var out []string
			for _, p := range s.derivedChain(c) {
				out = append(out, name[p])
			}
			return out
		}
		want := map[string]int{"X": 2, "Y": 1}
		for _, s := range []*Server{a, b} {
			t.Logf("%s: counts %v, out of 9 %v, chain of 9 %v", name[s.ID()], counts(s), outs(s), chain(s))
		}
		if ca, cb := counts(a), counts(b); !maps.Equal(ca, want) || !maps.Equal(cb, want) {
			t.Errorf("counts: A %v, B %v; want %v at both", ca, cb, want)
		}
		if oa, ob := outs(a), outs(b); !slices.Equal(oa, []string{"X"}) || !slices.Equal(ob, oa) {
			t.Errorf("out of 9's chain: A %v, B %v; want [X] at both", oa, ob)
		}
		if ca, cb := chain(a), chain(b); !slices.Equal(ca, cb) || slices.Contains(ca, "X") {
			t.Errorf("chain of 9: A %v, B %v; want the same, without X", ca, cb)
		}
	})
}

// replayKey is a server key that signs aborts in TestLogReplayAgrees.
func replayKey(t *testing.T) (crypto.PrivKey, peer.ID) {
	t.Helper()
	priv, err := LoadIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return priv, id
}

// replayEpoch is the epoch id of number n in TestLogReplayAgrees.
func replayEpoch(n uint64) [32]byte { return [32]byte{0xe0, byte(n)} }

// replayAbort is priv's signed fault abort of number n's epoch, as
// evidence.
func replayAbort(t *testing.T, priv crypto.PrivKey, n uint64) *wire.Charge {
	t.Helper()
	id, _ := peer.IDFromPrivateKey(priv)
	a := &wire.Abort{Epoch: replayEpoch(n), Number: n, Kind: wire.AbortFault, Signer: []byte(id), Reason: []byte(fmt.Sprintf("round 3 of %d: fault", n))}
	sig, err := proto.Sign(priv, proto.AbortDigest(a))
	if err != nil {
		t.Fatal(err)
	}
	a.Sig = sig
	return &wire.Charge{Kind: wire.EvAbort, Number: n, Item: a.Marshal()}
}
