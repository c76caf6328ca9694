package slots

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/proto"
)

func pid(i int) peer.ID { return peer.ID(fmt.Sprintf("peer-%d", i)) }

// TestTable: one slot a peer, perRange of a range, total in all; a slot
// given back is taken again, and TakeWait wakes on it.
func TestTable(t *testing.T) {
	var g Table
	var rel []func()
	for i := range 4 {
		r, err := g.Take(pid(i), fmt.Sprintf("r%d", i/2), 4, 2)
		if err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
		rel = append(rel, r)
	}
	if _, err := g.Take(pid(0), "r9", 8, 2); !errors.Is(err, proto.ErrWindowBusy) {
		t.Fatalf("a second slot of one peer: %v, want busy", err)
	}
	if _, err := g.Take(pid(9), "r0", 8, 2); !errors.Is(err, proto.ErrWindowBusy) {
		t.Fatalf("a third slot of one range: %v, want busy", err)
	}
	if _, err := g.Take(pid(9), "r9", 4, 2); !errors.Is(err, proto.ErrWindowBusy) {
		t.Fatalf("a fifth slot of 4: %v, want busy", err)
	}
	if g.Held() != 4 {
		t.Fatalf("held %d, want 4", g.Held())
	}
	done := make(chan error)
	go func() {
		r, err := g.TakeWait(context.Background(), pid(9), "r0", 4, 2)
		if err == nil {
			r()
		}
		done <- err
	}()
	rel[0]()
	if err := <-done; err != nil {
		t.Fatalf("TakeWait after a release: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, r := range rel[1:] {
		r()
	}
	if g.Held() != 0 || len(g.by) != 0 || len(g.inRange) != 0 {
		t.Fatalf("after every release: held %d, %d peers, %d ranges", g.Held(), len(g.by), len(g.inRange))
	}
	if err := g.Enter(ctx, pid(1), "", 1, 1); err != nil {
		t.Fatal(err)
	}
}

// TestIndexClientCaps: a registered client holds MaxIndexPerClient, the
// clients of one range MaxClientIndexPerRange, of one wide range
// MaxClientIndexPerWide; loopback is capped by no range.
func TestIndexClientCaps(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var g Index
	took := func(from peer.ID, rng, wide string) int {
		n := 0
		for range MaxIndexServing {
			if g.Enter(ctx, from, true, rng, wide) == nil {
				n++
			}
		}
		return n
	}
	if n := took(pid(0), "10.0.0.0/24", ""); n != MaxIndexPerClient {
		t.Fatalf("a client took %d, want %d", n, MaxIndexPerClient)
	}
	n := MaxIndexPerClient
	for i := 1; i < MaxIndexServing/MaxIndexPerClient; i++ {
		n += took(pid(i), "10.0.0.0/24", "")
	}
	if n != MaxClientIndexPerRange {
		t.Fatalf("the clients of one /24 took %d, want %d", n, MaxClientIndexPerRange)
	}
	wide := 0
	for i := range 12 {
		wide += took(pid(100+i), fmt.Sprintf("2001:db8:%d::/48", i/4), "2001:db8::/32")
	}
	if wide != MaxClientIndexPerWide {
		t.Fatalf("the clients of one /32 took %d, want %d", wide, MaxClientIndexPerWide)
	}
	lo := 0
	for i := range 8 {
		lo += took(pid(200+i), Loopback, Loopback)
	}
	if want := MaxIndexServing - MaxClientIndexPerRange - MaxClientIndexPerWide; lo != want {
		t.Fatalf("loopback clients took %d, want the %d left", lo, want)
	}
	if g.All() != MaxIndexServing {
		t.Fatalf("%d in flight, want %d", g.All(), MaxIndexServing)
	}
	if err := g.Enter(ctx, pid(300), false, "10.9.0.0/24", ""); !errors.Is(err, proto.ErrIndexBusy) {
		t.Fatalf("an outsider with every slot held: %v, want busy", err)
	}
}

// TestIndexOutsiders: outsiders share MaxOutsiderIndex, of one range
// MaxOutsiderIndexPerRange, and a slot comes back when its context ends.
func TestIndexOutsiders(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var g Index
	n := 0
	for i := range MaxOutsiderIndex {
		if g.Enter(ctx, pid(i), false, "10.0.0.0/24", "") == nil {
			n++
		}
	}
	if n != MaxOutsiderIndexPerRange {
		t.Fatalf("outsiders of one /24 took %d, want %d", n, MaxOutsiderIndexPerRange)
	}
	for i := range 2 * MaxOutsiderIndex {
		if g.Enter(ctx, pid(100+i), false, fmt.Sprintf("10.1.%d.0/24", i), "") == nil {
			n++
		}
	}
	if n != MaxOutsiderIndex {
		t.Fatalf("outsiders took %d, want %d", n, MaxOutsiderIndex)
	}
	if err := g.Enter(context.Background(), pid(999), true, "10.2.0.0/24", ""); err != nil {
		t.Fatalf("a client with the outsiders' share full: %v", err)
	}
	cancel()
	// The releases run in goroutines of their own.
	if err := wait.Until(context.Background(), 10*time.Second, func() bool { return g.Outsiders.Held() == 0 && g.All() == 1 }); err != nil {
		t.Fatalf("%d outsiders' slots held after their contexts ended", g.Outsiders.Held())
	}
}

// TestServers: a certified chain's server is never refused for want of
// a slot while the roster's others are capped.
func TestServers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var g Servers
	n := 0
	for i := range 2 * MaxRosterServing {
		if g.Enter(ctx, pid(i), false, fmt.Sprintf("10.0.%d.0/24", i/2)) == nil {
			n++
		}
	}
	if n != MaxRosterServing {
		t.Fatalf("the roster's others took %d, want %d", n, MaxRosterServing)
	}
	for i := range MaxCertServing {
		if err := g.Enter(ctx, pid(1000+i), true, ""); err != nil {
			t.Fatalf("chain server %d refused: %v", i, err)
		}
	}
}

// TestAsked: a roster asker has WouldServeFetches for a number, one at a
// time; the roster's others MaxRosterServing askers a number,
// MaxRosterPerRange of a range; a member always gets its own.
func TestAsked(t *testing.T) {
	var w Window
	done, ok := w.Asked(pid(0), 5, false, "r0")
	if !ok {
		t.Fatal("first fetch refused")
	}
	if _, ok := w.Asked(pid(0), 5, false, "r0"); ok {
		t.Fatal("a second fetch while one runs")
	}
	done(false) // could not run: given back
	for range WouldServeFetches {
		d, ok := w.Asked(pid(0), 5, false, "r0")
		if !ok {
			t.Fatal("a fetch within the budget refused")
		}
		d(true)
	}
	if _, ok := w.Asked(pid(0), 5, false, "r0"); ok {
		t.Fatal("a fetch past the budget")
	}
	n := 1
	for i := 1; i < 4*MaxRosterServing; i++ {
		if d, ok := w.Asked(pid(i), 5, false, fmt.Sprintf("r%d", i/8)); ok {
			n++
			d(true)
		}
	}
	if n != MaxRosterServing {
		t.Fatalf("%d roster askers, want %d", n, MaxRosterServing)
	}
	if _, ok := w.Asked(pid(999), 5, true, ""); !ok {
		t.Fatal("a member refused after a flood of roster askers")
	}
	// A later number forgets the earlier one's ended entries.
	if d, ok := w.Asked(pid(0), 6, false, "r0"); !ok {
		t.Fatal("the next number refused")
	} else {
		d(true)
	}
	if w.AskedLen() != 2 {
		t.Fatalf("%d entries after number 6, want 2 (6's and the member's running fetch)", w.AskedLen())
	}
	w.RememberYes([32]byte{1}, 6)
	if !w.SaidYes([32]byte{1}, 6) || w.SaidYes([32]byte{1}, 7) {
		t.Fatal("SaidYes")
	}
}
