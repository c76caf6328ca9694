package chargelog

import (
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/blame"
)

// TestPendBounded: evidence that comes before its certificate is held
// within PendPer a sender and PendMax in all, none of a number SeenKeep
// or more below the top, and judged once a certificate of its number
// naming its epoch comes (Rejudge); one naming another epoch leaves it
// held.
func TestPendBounded(t *testing.T) {
	ss := signers(t, 3)
	ctx := blame.Context{Epoch: [32]byte{9}, Chain: []peer.ID{ss[0].id, ss[1].id, ss[2].id}, Final: true}
	var l Log
	l.Init(t.TempDir(), nil, nil)
	for i := range PendPer + 2 {
		ev := faultAbort(t, ss[1], ctx.Epoch, 20, fmt.Sprint("reason ", i))
		if got, want := l.Pend(ss[0].id, ctx.Epoch, ev, 10), i < PendPer; got != want {
			t.Fatalf("evidence %d of one sender held %v, want %v", i, got, want)
		}
	}
	if ev := faultAbort(t, ss[1], ctx.Epoch, 3, "old"); l.Pend(ss[2].id, ctx.Epoch, ev, 3+SeenKeep) {
		t.Fatal("evidence SeenKeep numbers below the top held")
	}
	for i := 0; l.Pending() < PendMax; i++ {
		ev := faultAbort(t, ss[1], ctx.Epoch, 20, fmt.Sprint("many ", i))
		if !l.Pend(peer.ID(fmt.Sprint("sender-", i/PendPer)), ctx.Epoch, ev, 10) {
			t.Fatalf("evidence refused with %d held", l.Pending())
		}
	}
	if ev := faultAbort(t, ss[1], ctx.Epoch, 20, "one more"); l.Pend(ss[2].id, ctx.Epoch, ev, 10) {
		t.Fatalf("evidence held beyond PendMax = %d", PendMax)
	}
	l.Rejudge(20, blame.Context{Epoch: [32]byte{8}, Chain: ctx.Chain, Final: true})
	if n := l.Pending(); n != PendMax {
		t.Fatalf("a certificate of another epoch took %d pieces of evidence", PendMax-n)
	}
	l.Rejudge(20, ctx)
	if n := l.Pending(); n != 0 {
		t.Fatalf("%d pieces still held once their certificate came", n)
	}
	if c := l.RefusalCounts()[ss[1].id]; c != 1 {
		t.Fatalf("the signer's aborts of one epoch count %d, want 1", c)
	}
}
