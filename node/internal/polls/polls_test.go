package polls

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestGateBounds: an outsider holds at most OutsiderPerPeer polls, all
// outsiders at most their bound, a client ClientPerPeer even with the
// outsiders at theirs; an outsider's WaitOpen ends after its wait; every
// release gives its place back and the per-peer table empties.
func TestGateBounds(t *testing.T) {
	g := Gate{Outsiders: 3}
	var releases []func()
	enter := func(p peer.ID, client, short bool) error {
		_, rel, err := g.Enter(context.Background(), p, client, short, time.Minute)
		if err == nil {
			releases = append(releases, rel)
		}
		return err
	}
	for i := range OutsiderPerPeer {
		if err := enter("one", false, true); err != nil {
			t.Fatalf("outsider poll %d: %v", i, err)
		}
	}
	if err := enter("one", false, true); err == nil || !strings.Contains(err.Error(), "from this peer") {
		t.Fatalf("an outsider's poll over its bound: %v", err)
	}
	if err := enter("two", false, false); err != nil {
		t.Fatal(err)
	}
	if err := enter("three", false, false); err == nil || !strings.Contains(err.Error(), "without a slot") {
		t.Fatalf("an outsider's poll over the outsiders' bound: %v", err)
	}
	for i := range ClientPerPeer {
		if err := enter("client", true, true); err != nil {
			t.Fatalf("client poll %d with the outsiders at their bound: %v", i, err)
		}
	}
	if err := enter("client", true, false); err == nil {
		t.Fatal("a client's poll over its bound")
	}
	if total, open := g.Counts(); total != 3+ClientPerPeer || open != OutsiderPerPeer+ClientPerPeer {
		t.Fatalf("counts %d, %d", total, open)
	}
	for _, rel := range releases {
		rel()
	}
	if total, open := g.Counts(); total != 0 || open != 0 || len(g.per) != 0 || g.outsiders != 0 {
		t.Fatalf("after release: %d, %d, %d peers, %d outsiders", total, open, len(g.per), g.outsiders)
	}
	ctx, rel, err := g.Enter(context.Background(), "four", false, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Second {
		t.Fatal("an outsider's WaitOpen has no deadline of its wait")
	}
	ctx, rel, err = g.Enter(context.Background(), "client", true, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("a client's WaitOpen is cut short")
	}
}
