package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestWaivedEvidenceNotCountedAgain: evidence of an epoch whose end has a
// public cause in the log (a blame record of it) is held and not counted,
// whether the cause came before or after it, however often the same
// signed abort is handed on again (a relay, a leader's budget evidence, a
// replay by anyone); without the cause it counts once.
func TestWaivedEvidenceNotCountedAgain(t *testing.T) {
	priv, err := LoadIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := peer.IDFromPrivateKey(priv)
	other, _ := LoadIdentity(t.TempDir())
	otherID, _ := peer.IDFromPrivateKey(other)
	epoch := [32]byte{3}
	ctx := blame.Context{Epoch: epoch, Chain: []peer.ID{otherID, bad}, Final: true}
	a := &wire.Abort{Epoch: epoch, Number: 5, Kind: wire.AbortFault, Signer: []byte(bad), Reason: []byte("no")}
	a.Sig, _ = proto.Sign(priv, proto.AbortDigest(a))
	ev := &wire.Charge{Kind: wire.EvAbort, Number: 5, Item: a.Marshal()}
	for _, first := range []bool{true, false} {
		s := &Server{cfg: ServerConfig{DataDir: t.TempDir()}, log: quietLogger()}
		s.ref.Init(s.cfg.DataDir, s.log, nil)
		if first {
			s.ref.Cause(epoch)
		}
		for range 2 {
			if _, err := s.ref.LogCharge(ev, ctx); err != nil {
				t.Fatal(err)
			}
		}
		if !first {
			s.ref.Cause(epoch)
		}
		if n := s.ref.RefusalCounts()[bad]; n != 0 {
			t.Fatalf("cause first %v: an abort of an epoch with a blame record counts %d", first, n)
		}
		if ev := s.ref.BudgetEvidence(otherID, func(peer.ID) bool { return true }); len(ev) != 0 {
			t.Fatalf("cause first %v: waived evidence handed on as a budget's (%d)", first, len(ev))
		}
	}
	// Without a cause, the same abort counts once, however often it comes.
	fresh := &Server{cfg: ServerConfig{DataDir: t.TempDir()}, log: quietLogger()}
	fresh.ref.Init(fresh.cfg.DataDir, fresh.log, nil)
	for range 3 {
		if _, err := fresh.ref.LogCharge(ev, ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := fresh.ref.RefusalCounts()[bad]; n != 1 {
		t.Fatalf("an abort handed on three times counts %d, want 1", n)
	}
}
