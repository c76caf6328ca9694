package window

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// fakePeers: a and b are servers of the group; a full client slot; the
// calls' replies by peer.
type fakePeers struct {
	mu      sync.Mutex
	full    bool
	entered []peer.ID
	refused peer.ID
	replies map[peer.ID][]byte
	asked   []peer.ID
}

func (f *fakePeers) Self() peer.ID               { return "self" }
func (f *fakePeers) Group(p peer.ID) bool        { return p == "a" || p == "b" }
func (f *fakePeers) Refuse(p peer.ID) bool       { return p == f.refused }
func (f *fakePeers) Reply(peer.ID, *wire.Window) {}

func (f *fakePeers) EnterClient(_ context.Context, p peer.ID) error {
	if f.full {
		return errors.New("slots full")
	}
	f.entered = append(f.entered, p)
	return nil
}

func (f *fakePeers) EnterServer(_ context.Context, p peer.ID) error {
	f.entered = append(f.entered, p)
	return nil
}

func (f *fakePeers) Call(_ context.Context, p peer.ID, _ transport.Request) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, p)
	if rep, ok := f.replies[p]; ok {
		return rep, nil
	}
	return nil, errors.New("no answer")
}

// TestServeWindow: a server outside the group is refused before it takes
// a slot; a client waits for one of the clients' slots and is refused
// when they are full; both get the window.
func TestServeWindow(t *testing.T) {
	ws, _ := newStore(3)
	f := &fakePeers{}
	s := &Service{Items: ws, Peers: f}
	req := (&wire.WindowReq{Number: 4}).Marshal()
	ctx := context.Background()
	if _, _, err := s.OnServerReq(ctx, "stranger", req); err == nil || len(f.entered) != 0 {
		t.Fatalf("a stranger on the servers' path: %v, slots taken %v", err, f.entered)
	}
	typ, rep, err := s.OnServerReq(ctx, "a", req)
	var w wire.Window
	if err != nil || typ != wire.TypeWindow || w.Unmarshal(rep) != nil || len(w.Items) != 3 {
		t.Fatalf("a server of the group: %v, %d items", err, len(w.Items))
	}
	if _, _, err := s.OnClientReq(ctx, "c", req); err != nil || len(f.entered) != 2 {
		t.Fatalf("a client: %v, slots %v", err, f.entered)
	}
	f.refused = "c"
	if _, _, err := s.OnClientReq(ctx, "c", req); err == nil {
		t.Fatal("the hook's refusal ignored")
	}
	f.full = true
	if _, _, err := s.OnClientReq(ctx, "d", req); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("a client with the slots full: %v", err)
	}
}

// TestAskWindow: every other server is asked at once, this one never; the
// items of those that answer are gathered.
func TestAskWindow(t *testing.T) {
	it := wire.WindowItem{Number: 2, Epoch: [32]byte{2}, Group: []byte{2}}
	f := &fakePeers{replies: map[peer.ID][]byte{"a": (&wire.Window{Items: []wire.WindowItem{it}}).Marshal(), "b": []byte("junk")}}
	s := &Service{Peers: f}
	got := s.Ask(context.Background(), []peer.ID{"self", "a", "b", "c"}, 4)
	if len(got) != 1 || got[0].Number != 2 || len(f.asked) != 3 {
		t.Fatalf("got %d items from %v", len(got), f.asked)
	}
	for _, p := range f.asked {
		if p == "self" {
			t.Fatal("this server asked itself")
		}
	}
}

// gapCerts keeps certificates; bad ones fail their check.
type gapCerts struct {
	kept map[uint64]*wire.Cert
	bad  map[uint64]bool
}

func (g *gapCerts) Of(n uint64) (*wire.Cert, bool)   { c, ok := g.kept[n]; return c, ok }
func (g *gapCerts) AbortAfterFinal(*wire.Cert) error { return nil }
func (g *gapCerts) Add(c *wire.Cert)                 { g.kept[c.Number] = c }
func (g *gapCerts) Check(c *wire.Cert) error {
	if g.bad[c.Number] {
		return errors.New("does not verify")
	}
	return nil
}

// TestCheckGap: a gap of the right shape is checked the oldest first and
// each certificate kept once it checks; one that does not check refuses
// the gap, keeping none after it.
func TestCheckGap(t *testing.T) {
	prev := &wire.Cert{Kind: wire.CertTimeout, Number: 9}
	gap := []wire.Cert{{Kind: wire.CertTimeout, Number: 8}, {Kind: wire.CertFinal, Number: 7, Epoch: [32]byte{7}}}
	g := &gapCerts{kept: map[uint64]*wire.Cert{}, bad: map[uint64]bool{8: true}}
	if err := CheckGap(g, 10, prev, gap); err == nil || !strings.Contains(err.Error(), "of 8") {
		t.Fatalf("a gap whose certificate of 8 does not verify: %v", err)
	}
	if _, ok := g.kept[7]; !ok || len(g.kept) != 1 {
		t.Fatalf("kept %d certificates, want only 7's (the oldest, checked first)", len(g.kept))
	}
	g.bad = nil
	if err := CheckGap(g, 10, prev, gap); err != nil || len(g.kept) != 2 {
		t.Fatalf("a good gap: %v, kept %d", err, len(g.kept))
	}
	if err := CheckGap(g, 10, prev, gap[:1]); err == nil {
		t.Fatal("a gap that stops short of an epoch")
	}
}
