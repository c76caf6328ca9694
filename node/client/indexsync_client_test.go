//go:build riffletest

package client

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestCursorOnlyAtPrimary (§7 v3, issue 26): a sync from a server other
// than the primary starts from 0 whatever the client read there before:
// a kept cursor there would link the client's runs (a fresh peer id each)
// through where its last sync from that server ended.
func TestCursorOnlyAtPrimary(t *testing.T) {
	prim, other := peer.ID("primary"), peer.ID("other")
	c := &Client{primary: prim, log: quietLogger()}
	c.loadIndexCopy()
	c.icopy.cursors[prim], c.icopy.cursors[other] = 7, 9
	if got := c.cursorOf(prim); got != 7 {
		t.Fatalf("primary's cursor %d, want 7", got)
	}
	if got := c.cursorOf(other); got != 0 {
		t.Fatalf("another server's cursor %d, want 0", got)
	}
}

// TestWindowOldPoolsLogged (§6.4 v3, issue 26): a window epoch whose
// pool an older build signed (wire.PoolV1) names no manifest ids; the
// start's check leaves it out and says so in one log line naming the
// epochs, and checks the others' ids as before.
func TestWindowOldPoolsLogged(t *testing.T) {
	var buf bytes.Buffer
	c := &Client{primary: peer.ID("primary"), log: slog.New(slog.NewTextHandler(&buf, nil))}
	c.loadIndexCopy()
	held := [32]byte{0xa1}
	c.icopy.mans[held] = []byte("m")
	c.decoys.set([]*proto.PoolEpoch{
		{Number: 7, Manifests: [][32]byte{held}},
		{Number: 6, IDLess: true},
		{Number: 5, IDLess: true},
	})
	c.checkWindow(context.Background(), nil, true)
	out := buf.String()
	if !strings.Contains(out, "older build") || !strings.Contains(out, "epochs=\"[6 5]\"") {
		t.Fatalf("no line names the id-less epochs: %q", out)
	}
	due, idless := windowDue(c.decoys.epochs)
	if len(due) != 1 || due[0] != held || len(idless) != 2 {
		t.Fatalf("due %x, id-less %v", due, idless)
	}
}
