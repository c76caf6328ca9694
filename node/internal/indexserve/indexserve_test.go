package indexserve

import (
	"context"
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/store"
)

type peers struct{ group map[peer.ID]bool }

func (p peers) Client(q peer.ID) bool                                    { return q == "client" }
func (p peers) Ranges(peer.ID) (rng, wide string)                        { return "10.0.0.0/24", "" }
func (p peers) Group(q peer.ID) bool                                     { return p.group[q] }
func (p peers) Page() int                                                { return 0 }
func (p peers) Manifests(_ peer.ID, m []store.Manifest) []store.Manifest { return m }
func (p peers) Closings(_ peer.ID, r [][]byte) [][]byte                  { return r }
func (p peers) EnterServer(ctx context.Context, g *slots.Servers, q peer.ID) error {
	return g.Enter(ctx, q, false, "10.1.0.0/24")
}

type log struct{ budgets []int }

func (l *log) IndexSince(cursor uint64, budget int) (store.IndexChanges, error) {
	l.budgets = append(l.budgets, budget)
	return store.IndexChanges{Next: cursor + 1, Closings: [][]byte{make([]byte, 64)}}, nil
}

// TestIndexPages: a page answers a cursor within the page budget; an
// outsider of one /24 holds its range's share of the slots; a server of
// the group is served over the epoch protocol outside them, anyone else
// refused there before the request is parsed.
func TestIndexPages(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := &log{}
	ps := peers{group: map[peer.ID]bool{"server": true}}
	sv := &Service{Slots: &slots.Index{}, Store: l, Peers: ps, Hooks: ps}
	req := (&wire.IndexReq{Cursor: 7}).Marshal()
	typ, body, err := sv.OnIndexReq(ctx, "someone", req)
	if err != nil || typ != wire.TypeIndex {
		t.Fatal(typ, err)
	}
	var page wire.Index
	if err := page.Unmarshal(body, wire.MaxIndexPage); err != nil || page.Next != 8 || len(page.Closings) != 1 {
		t.Fatalf("page %+v: %v", page, err)
	}
	if l.budgets[0] != wire.IndexPageBytes {
		t.Fatalf("budget %d, want %d", l.budgets[0], wire.IndexPageBytes)
	}
	n := 1
	for range slots.MaxOutsiderIndex {
		if _, _, err := sv.OnIndexReq(ctx, peer.ID("o"+string(rune('a'+n))), req); err == nil {
			n++
		} else if !errors.Is(err, proto.ErrIndexBusy) {
			t.Fatal(err)
		}
	}
	if n != slots.MaxOutsiderIndexPerRange {
		t.Fatalf("outsiders of one /24 took %d pages at once, want %d", n, slots.MaxOutsiderIndexPerRange)
	}
	if _, _, err := sv.OnIndexReq(ctx, "client", req); err != nil {
		t.Fatalf("a client with the outsiders' range share full: %v", err)
	}
	if _, _, err := sv.OnServerIndexReq(ctx, "server", req); err != nil {
		t.Fatalf("a server of the group: %v", err)
	}
	before := len(l.budgets)
	if _, _, err := sv.OnServerIndexReq(ctx, "stranger", req); err == nil || len(l.budgets) != before {
		t.Fatal("a stranger served over the epoch protocol")
	}
}
