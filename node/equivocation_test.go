package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/signed"
)

// TestEquivocationEvidence: a server's final signature of a number and its
// timeout signature of that number charge it (blame.ChargeOf of an
// EvEquiv charge) in the context of the number's certificate; two signers'
// halves, a signature that does not verify, or another epoch's context
// charge nobody and are refused.
func TestEquivocationEvidence(t *testing.T) {
	keys := newCertKeys(t, 3)
	const K = 7
	final := finalCertBy(t, keys, keys, K)
	ctx, err := blame.CertContext(final)
	if err != nil {
		t.Fatal(err)
	}
	timeout := &wire.Cert{Kind: wire.CertTimeout, Number: K, Chain: final.Chain}
	for _, i := range []int{1, 2} {
		timeout.Sigs = append(timeout.Sigs, wire.CertSig{Index: uint16(i), Sig: certSign(t, keys[i], proto.TimeoutDigest(K, final.Chain))})
	}
	ev := chargelog.Equivocation(final, 1, timeout, 1)
	if ev == nil {
		t.Fatal("no evidence of position 1")
	}
	if p, _, err := blame.ChargeOf(ev, ctx); err != nil || p != keys[1].id {
		t.Fatalf("the equivocation charges %v (%v), want position 1", p, err)
	}
	// Through the wire and back: the same charge.
	var back wire.Charge
	if err := back.Unmarshal(ev.Marshal()); err != nil {
		t.Fatal(err)
	}
	if p, _, err := blame.ChargeOf(&back, ctx); err != nil || p != keys[1].id {
		t.Fatalf("decoded: charges %v (%v)", p, err)
	}
	// Position 1's final half with position 2's timeout half.
	mixed := chargelog.Equivocation(final, 1, timeout, 2)
	f, tm, _ := blame.ParseEquiv(ev.Item)
	_, t2, _ := blame.ParseEquiv(mixed.Item)
	if _, _, err := blame.ChargeOf(&wire.Charge{Kind: wire.EvEquiv, Number: K, Item: blame.EquivItem(f, t2)}, ctx); err == nil {
		t.Error("two signers' halves charged")
	}
	// A timeout signature by another key.
	bad := *tm
	bad.Sigs = []wire.CertSig{{Index: 1, Sig: certSign(t, keys[0], proto.TimeoutDigest(K, final.Chain))}}
	if _, _, err := blame.ChargeOf(&wire.Charge{Kind: wire.EvEquiv, Number: K, Item: blame.EquivItem(f, &bad)}, ctx); err == nil {
		t.Error("a forged timeout signature charged")
	}
	other := ctx
	other.Epoch = [32]byte{9}
	if _, _, err := blame.ChargeOf(ev, other); err == nil {
		t.Error("charged in another epoch's context")
	}
	two := chargelog.Equivocation(final, 2, timeout, 2)
	if p, _, err := blame.ChargeOf(two, ctx); err != nil || p != keys[2].id {
		t.Errorf("position 2's equivocation charges %v (%v)", p, err)
	}
	if blame.ChargeKey(ev) == blame.ChargeKey(two) || blame.ChargeKey(ev) == "" {
		t.Error("two servers' equivocations under one key")
	}
}

// TestPhaseMarks: a server that signed a number's final descriptor signs
// no timeout of it, and one that signed a number's timeout no open
// descriptor of it, also after a restart (the marks are on disk first).
func TestPhaseMarks(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		if err := s.phase.Mark(s.cfg.DataDir, 5, true); err != nil {
			t.Fatal(err)
		}
		if err := s.phase.Mark(s.cfg.DataDir, 5, false); err == nil {
			t.Error("the timeout of 5 signed after its final descriptor")
		}
		if err := s.phase.Mark(s.cfg.DataDir, 6, false); err != nil {
			t.Fatalf("the timeout of 6: %v", err)
		}
		if err := s.phase.Mark(s.cfg.DataDir, 6, true); err == nil {
			t.Error("the final descriptor of 6 signed after its timeout")
		}
		// As after a restart: read back from the data directory.
		s.phase = signed.Marks{}
		if !s.phase.TimeoutSigned(s.cfg.DataDir, 6) || s.phase.TimeoutSigned(s.cfg.DataDir, 7) {
			t.Error("the timeout of 6 forgotten, or 7 taken as signed")
		}
		if err := s.phase.Mark(s.cfg.DataDir, 5, false); err == nil {
			t.Error("after a restart, the timeout of 5 signed after its final descriptor")
		}
		// A data directory from before the marks (epoch number 7, no
		// phases), or with a file it cannot read: it may have signed
		// the final descriptor of 7 and the timeout of 8, so it signs
		// the other of neither. Before, it started from nothing and
		// signed both, its equivocation.
		for _, phases := range []string{"", "garbage"} {
			dir := s.cfg.DataDir
			if err := os.WriteFile(filepath.Join(dir, EpochNumberFile), []byte("7\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, signed.PhaseFile))
			if phases != "" {
				if err := os.WriteFile(filepath.Join(dir, signed.PhaseFile), []byte(phases), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s.phase = signed.Marks{}
			if err := s.phase.Mark(s.cfg.DataDir, 7, false); err == nil {
				t.Errorf("phases %q: the timeout of 7 signed by a server at epoch number 7", phases)
			}
			if err := s.phase.Mark(s.cfg.DataDir, 8, true); err == nil {
				t.Errorf("phases %q: the final descriptor of 8 signed, its timeout maybe signed before", phases)
			}
			if err := s.phase.Mark(s.cfg.DataDir, 9, true); err != nil {
				t.Errorf("phases %q: the final descriptor of 9: %v", phases, err)
			}
		}
	})
}

// TestVotesThenFinalCharged: a chain server's timeout vote of a number
// held here, then the number's final certificate, which it signed too:
// the vote and its final signature are its equivocation, charged here.
// Before, the votes of a certified number were dropped and nothing was
// charged.
func TestVotesThenFinalCharged(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		keys := newCertKeys(t, 3)
		const K = 4
		final := finalCertBy(t, keys, keys, K)
		vote := &wire.Cert{Kind: wire.CertTimeout, Number: K, Chain: final.Chain,
			Sigs: []wire.CertSig{{Index: 2, Sig: certSign(t, keys[2], proto.TimeoutDigest(K, final.Chain))}}}
		s.cert.NoteVote(vote)
		s.cert.Keep(final)
		charged := func() bool { return s.ref.RefusalCounts()[keys[2].id] == 1 }
		if err := wait.Until(context.Background(), 10*time.Second, charged); err != nil {
			t.Fatalf("the equivocating voter counted %d times, want 1 (counts %v)", s.ref.RefusalCounts()[keys[2].id], s.ref.RefusalCounts())
		}
		for _, k := range keys[:2] {
			if n := s.ref.RefusalCounts()[k.id]; n != 0 {
				t.Errorf("a server that did not vote counted %d times", n)
			}
		}
	})
}
