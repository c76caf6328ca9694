package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestWaivedEvidenceNotCountedAgain: evidence whose charge was waived for
// a public cause stays held, waived, so that the same signed abort
// handed on again (a relay, a leader's budget evidence, a replay by
// anyone) is not counted, here or after a restart.
func TestWaivedEvidenceNotCountedAgain(t *testing.T) {
	dir := t.TempDir()
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
	s := &Server{cfg: ServerConfig{DataDir: dir}, log: quietLogger()}
	s.ref.Init(s.cfg.DataDir, s.log, nil)
	if _, err := s.ref.LogCharge(ev, ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ref.LogCharge(ev, ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := s.ref.RefusalCounts()[bad]; n != 0 {
		t.Fatalf("a waived abort handed on again counts %d", n)
	}
	again := &Server{cfg: ServerConfig{DataDir: dir}, log: quietLogger()}
	again.ref.Init(again.cfg.DataDir, again.log, nil)
	if _, err := again.ref.LogCharge(ev, ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := again.ref.RefusalCounts()[bad]; n != 0 {
		t.Fatalf("after a restart, a waived abort handed on again counts %d", n)
	}
	// Not waived, the same abort counts once, however often it comes.
	fresh := &Server{cfg: ServerConfig{DataDir: t.TempDir()}, log: quietLogger()}
	fresh.ref.Init(fresh.cfg.DataDir, fresh.log, nil)
	for range 3 {
		if _, err := fresh.ref.LogCharge(ev, ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := fresh.ref.RefusalCounts()[bad]; n != 1 {
		t.Fatalf("an abort handed on three times counts %d, want 1", n)
	}
}
