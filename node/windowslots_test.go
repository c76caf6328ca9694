//go:build riffletest

package node

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/slots"
)

// TestWindowSlotsBounded (§6.3 v3, principle 3): a server holds at most
// slots.MaxWindowServing window replies at once, one a peer and at most
// slots.MaxWindowPerRange of one address range, and refuses more with
// errWindowBusy; a slot comes back when its reply's stream ends.
func TestWindowSlotsBounded(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		s := &Server{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ids := make([]peer.ID, slots.MaxWindowServing+1)
		for i := range ids {
			k, _, err := crypto.GenerateEd25519Key(nil)
			if err != nil {
				t.Fatal(err)
			}
			ids[i], _ = peer.IDFromPrivateKey(k)
		}
		// Peer i in range i / slots.MaxWindowPerRange: every range full.
		rng := func(i int) string { return fmt.Sprintf("10.0.%d.0/24", i/slots.MaxWindowPerRange) }
		first, done := context.WithCancel(ctx)
		if err := s.windowSlots.EnterClient(first, ids[0], rng(0)); err != nil {
			t.Fatal(err)
		}
		if err := s.windowSlots.EnterClient(ctx, ids[0], rng(0)); !errors.Is(err, proto.ErrWindowBusy) {
			t.Fatalf("a second window of one peer at once: %v, want %v", err, proto.ErrWindowBusy)
		}
		for i := 1; i < slots.MaxWindowPerRange; i++ {
			if err := s.windowSlots.EnterClient(ctx, ids[i], rng(i)); err != nil {
				t.Fatal(err)
			}
		}
		// The range's share is taken: one more of it waits, another
		// range's peer is served.
		if err := s.windowSlots.EnterClient(ctx, ids[slots.MaxWindowServing], rng(0)); !errors.Is(err, proto.ErrWindowBusy) {
			t.Fatalf("window %d of one range at once: %v, want %v", slots.MaxWindowPerRange+1, err, proto.ErrWindowBusy)
		}
		for i := slots.MaxWindowPerRange; i < slots.MaxWindowServing; i++ {
			if err := s.windowSlots.EnterClient(ctx, ids[i], rng(i)); err != nil {
				t.Fatalf("peer %d of range %s: %v", i, rng(i), err)
			}
		}
		last := ids[slots.MaxWindowServing]
		if err := s.windowSlots.EnterClient(ctx, last, "10.9.9.0/24"); !errors.Is(err, proto.ErrWindowBusy) {
			t.Fatalf("window %d at once: %v, want %v", slots.MaxWindowServing+1, err, proto.ErrWindowBusy)
		}
		done()
		if err := wait.Until(ctx, time.Second, func() bool { return s.windowSlots.EnterClient(ctx, last, rng(0)) == nil }); err != nil {
			t.Fatalf("the slot of an ended reply did not come back: %v", err)
		}
	})
}
