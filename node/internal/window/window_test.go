package window

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// memBacking keeps window items in memory.
type memBacking map[[32]byte][]byte

func (m memBacking) PutWindowItem(_ uint64, key [32]byte, b []byte) error {
	m[key] = append([]byte(nil), b...)
	return nil
}

func (m memBacking) WindowItem(_ uint64, key [32]byte) ([]byte, error) {
	b, ok := m[key]
	if !ok {
		return nil, errors.New("not found")
	}
	return b, nil
}

// certSrc is a Source of final certificates by number.
type certSrc struct {
	certs map[uint64]*wire.Cert
	lack  bool
}

func (c certSrc) CertOf(n uint64) (*wire.Cert, bool) { x, ok := c.certs[n]; return x, ok }
func (c certSrc) Group([32]byte) []byte              { return nil }
func (c certSrc) Lack() bool                         { return c.lack }
func (c certSrc) Unpinned() bool                     { return false }
func (c certSrc) Ask(context.Context, []peer.ID, uint64) []wire.WindowItem {
	return nil
}

func newStore(n uint64) (*Items, *certSrc) {
	src := &certSrc{certs: map[uint64]*wire.Cert{}}
	ws := &Items{St: memBacking{}, Src: src, Log: slog.New(slog.DiscardHandler)}
	var items []wire.WindowItem
	for i := uint64(1); i <= n; i++ {
		id := [32]byte{byte(i)}
		src.certs[i] = &wire.Cert{Kind: wire.CertFinal, Number: i, Epoch: id}
		items = append(items, wire.WindowItem{Number: i, Epoch: id, Group: []byte{byte(i)}})
	}
	ws.Keep(items)
	return ws, src
}

func numbers(items []wire.WindowItem) []uint64 {
	var out []uint64
	for _, it := range items {
		out = append(out, it.Number)
	}
	return out
}

// TestServedFollowsWalk: without a checked walk a server serves the
// epochs its certificates name, newest first; with one, exactly the
// walk's epochs, whatever its certificates say. Nothing below 2 (a
// request for 0 once spun a core).
func TestServedFollowsWalk(t *testing.T) {
	ws, _ := newStore(3)
	if got := numbers(ws.Served(4)); len(got) != 3 || got[0] != 3 || got[2] != 1 {
		t.Fatalf("served %v, want 3 2 1", got)
	}
	ws.KeepWalk(4, []Ref{{Number: 2, Epoch: [32]byte{2}}})
	if got := numbers(ws.Served(4)); len(got) != 1 || got[0] != 2 {
		t.Fatalf("served %v after the walk, want 2", got)
	}
	if refs, ok := ws.Walk(4); !ok || len(refs) != 1 || refs[0].Epoch != [32]byte{2} {
		t.Fatalf("walk %v %v", refs, ok)
	}
	if got := numbers(ws.Held(4)); len(got) != 4 {
		t.Fatalf("held %v, want the walk and the three certified epochs", got)
	}
	for _, n := range []uint64{0, 1} {
		if got := ws.Served(n); got != nil {
			t.Fatalf("served %d items for %d", len(got), n)
		}
	}
}

// TestPinnedRecordServed: of two records of one epoch, the first kept is
// this server's own and the other is kept under its digest: a walk that
// pins either gets that record. Past the pins' look-back, or while the
// window is withheld, the descriptor only.
func TestPinnedRecordServed(t *testing.T) {
	ws, src := newStore(1)
	id := [32]byte{1}
	a := (&wire.Closing{Epoch: id, Pairs: 1}).Marshal()
	b := (&wire.Closing{Epoch: id, Pairs: 2}).Marshal()
	ws.Keep([]wire.WindowItem{{Number: 1, Epoch: id, Group: []byte{1}, Closing: a}})
	ws.Keep([]wire.WindowItem{{Number: 1, Epoch: id, Group: []byte{1}, Closing: b}})
	dgB := Refs([]wire.WindowItem{{Closing: b}})[0].Digest
	if it := ws.ServedItem(Ref{Number: 1, Epoch: id}, 2); !bytes.Equal(it.Closing, a) {
		t.Fatal("own item: not the first record")
	}
	if it := ws.ServedItem(Ref{Number: 1, Epoch: id, Digest: dgB}, 2); !bytes.Equal(it.Closing, b) || !SameRecord(it.Closing, dgB) {
		t.Fatal("pinned item: not the pinned record")
	}
	if it := ws.ServedItem(Ref{Number: 1, Epoch: id, Digest: dgB}, 2+proto.WindowLookback); it.Closing != nil || it.Group == nil {
		t.Fatal("beyond the look-back: a record served")
	}
	src.lack = true
	if it := ws.ServedItem(Ref{Number: 1, Epoch: id}, 2); it.Closing != nil {
		t.Fatal("withheld window: a record served")
	}
}

// TestServedToServersAddsCheckedWalk: a server of the group asking for
// the window of a number whose Prepare was checked here but not yet
// taken also gets the checked walk's pinned record, which the window
// served to clients (the certificates' own items) lacks.
func TestServedToServersAddsCheckedWalk(t *testing.T) {
	ws, _ := newStore(3)
	id := [32]byte{3}
	b := (&wire.Closing{Epoch: id, Pairs: 2}).Marshal()
	ws.Keep([]wire.WindowItem{{Number: 3, Epoch: id, Group: []byte{3}, Closing: b}})
	dgB := Refs([]wire.WindowItem{{Closing: b}})[0].Digest
	ws.Put(ItemKey(id, [32]byte{}), wire.WindowItem{Number: 3, Epoch: id, Group: []byte{3}})
	ws.checked.number, ws.checked.refs = 4, []Ref{{Number: 3, Epoch: id, Digest: dgB}}
	if got := ws.Served(4); len(got) != 3 {
		t.Fatalf("served clients %d items, want 3", len(got))
	}
	got := ws.ServedToServers(4)
	if len(got) != 4 || !bytes.Equal(got[3].Closing, b) {
		t.Fatalf("served servers %v, want the three and the checked walk's record", numbers(got))
	}
	if got := ws.ServedToServers(5); len(got) != 3 {
		t.Fatalf("another number: %d items, want 3", len(got))
	}
}
