//go:build riffletest

package client

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
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
