//go:build riffletest

package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestWindowSlotsBounded (§6.3 v3, principle 3): a server holds at most
// maxWindowServing window replies at once, one a peer, and refuses more
// with errWindowBusy; a slot comes back when its reply's stream ends.
func TestWindowSlotsBounded(t *testing.T) {
	virtual(t, func(t *testing.T) {
		s := &Server{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ids := make([]peer.ID, maxWindowServing+1)
		for i := range ids {
			k, _, err := crypto.GenerateEd25519Key(nil)
			if err != nil {
				t.Fatal(err)
			}
			ids[i], _ = peer.IDFromPrivateKey(k)
		}
		first, done := context.WithCancel(ctx)
		if err := s.enterWindow(first, ids[0]); err != nil {
			t.Fatal(err)
		}
		if err := s.enterWindow(ctx, ids[0]); !errors.Is(err, errWindowBusy) {
			t.Fatalf("a second window of one peer at once: %v, want %v", err, errWindowBusy)
		}
		for _, p := range ids[1:maxWindowServing] {
			if err := s.enterWindow(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		last := ids[maxWindowServing]
		if err := s.enterWindow(ctx, last); !errors.Is(err, errWindowBusy) {
			t.Fatalf("window %d at once: %v, want %v", maxWindowServing+1, err, errWindowBusy)
		}
		done()
		if err := wait.Until(ctx, time.Second, func() bool { return s.enterWindow(ctx, last) == nil }); err != nil {
			t.Fatalf("the slot of an ended reply did not come back: %v", err)
		}
	})
}
