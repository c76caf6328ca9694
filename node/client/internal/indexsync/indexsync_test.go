package indexsync

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// server is a Host whose servers answer each index request with the page
// serve returns for its cursor.
type server struct {
	primary  peer.ID
	serve    func(p peer.ID, cur uint64) (*wire.Index, error)
	mu       sync.Mutex // the others are asked at once
	calls    int
	closings int
	listens  []peer.ID
}

func (s *server) Primary() peer.ID  { return s.primary }
func (s *server) DB() DB            { return nil }
func (s *server) Log() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (s *server) Closing([]byte)    { s.closings++ }
func (s *server) NoGapFill() bool   { return false }
func (s *server) Self() peer.ID     { return self }
func (s *server) Listens(p peer.ID, _ [][]byte) {
	s.mu.Lock()
	s.listens = append(s.listens, p)
	s.mu.Unlock()
}
func (s *server) Call(_ context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	var q wire.IndexReq
	if err := q.Unmarshal(r.Body); err != nil {
		return nil, err
	}
	pg, err := s.serve(p, q.Cursor)
	if err != nil {
		return nil, err
	}
	return pg.Marshal(), nil
}

func entry(b byte) wire.IndexEntry {
	return wire.IndexEntry{FileID: [32]byte{b}, Name: []byte{'f', b}, Size: 1, Chunks: 1}
}

var prim, other, self, third = newID(), newID(), newID(), newID()

// newID is a fresh peer id (a group entry's ids must parse).
func newID() peer.ID {
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		panic(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return id
}

// TestCursorOnlyAtPrimary (§7 v3, issue 26): a sync from a server other
// than the primary starts from 0 whatever the client read there before:
// a kept cursor there would link the client's runs (a fresh peer id each)
// through where its last sync from that server ended.
func TestCursorOnlyAtPrimary(t *testing.T) {
	ic := &Copy{Host: &server{primary: prim}}
	ic.Load()
	ic.cursors[prim], ic.cursors[other] = 7, 9
	if got := ic.cursorOf(prim); got != 7 {
		t.Fatalf("primary's cursor %d, want 7", got)
	}
	if got := ic.cursorOf(other); got != 0 {
		t.Fatalf("another server's cursor %d, want 0", got)
	}
}

// TestSyncPagesAndCursor: a sync reads page after page from the cursor
// each page gives, keeps what they carry, and the next sync asks from
// where the last ended; closing records in a page go to the hook only.
func TestSyncPagesAndCursor(t *testing.T) {
	var asked []uint64
	h := &server{primary: prim, serve: func(_ peer.ID, cur uint64) (*wire.Index, error) {
		asked = append(asked, cur)
		switch cur {
		case 0:
			return &wire.Index{Next: 2, More: true, Entries: []wire.IndexEntry{entry(1)}, Closings: [][]byte{make([]byte, 44)}}, nil
		case 2:
			return &wire.Index{Next: 3, Entries: []wire.IndexEntry{entry(2)}}, nil
		}
		return &wire.Index{Next: cur}, nil
	}}
	ic := &Copy{Host: h}
	res, err := ic.SyncFrom(context.Background(), prim)
	if err != nil || res.Pages != 2 || res.Entries != 2 || res.Closings != 1 || h.closings != 1 {
		t.Fatalf("sync %+v, %v; closings to the hook %d", res, err, h.closings)
	}
	if len(ic.Entries()) != 2 {
		t.Fatalf("copy holds %d entries, want 2", len(ic.Entries()))
	}
	if _, err := ic.SyncFrom(context.Background(), prim); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0, 2, 3}; len(asked) != 3 || asked[2] != 3 {
		t.Fatalf("asked from %v, want %v", asked, want)
	}
}

// TestPageMustMoveCursor: a page whose Next goes back with items, or
// stays with items or More, is refused; one that goes back empty (a
// replaced store) restarts the sync from 0 once, not twice.
func TestPageMustMoveCursor(t *testing.T) {
	one := func(pg wire.Index) map[uint64]wire.Index { return map[uint64]wire.Index{5: pg} }
	for name, c := range map[string]struct {
		pages map[uint64]wire.Index
		want  string
	}{
		"back with items": {one(wire.Index{Next: 3, Entries: []wire.IndexEntry{entry(1)}}), "does not move the cursor on"},
		"same with items": {one(wire.Index{Next: 5, Entries: []wire.IndexEntry{entry(1)}}), "does not move the cursor on"},
		"same with more":  {one(wire.Index{Next: 5, More: true}), "does not move the cursor on"},
		"back once":       {map[uint64]wire.Index{5: {Next: 3}, 0: {Next: 3, Entries: []wire.IndexEntry{entry(1)}}}, ""},
		"back twice":      {map[uint64]wire.Index{5: {Next: 3}, 0: {Next: 3, More: true}, 3: {Next: 1}}, "cursor moved back twice"},
	} {
		t.Run(name, func(t *testing.T) {
			h := &server{primary: prim, serve: func(_ peer.ID, cur uint64) (*wire.Index, error) {
				pg, ok := c.pages[cur]
				if !ok {
					t.Fatalf("asked from %d", cur)
				}
				return &pg, nil
			}}
			ic := &Copy{Host: h}
			ic.SetCursor(prim, 5)
			res, err := ic.SyncFrom(context.Background(), prim)
			if c.want == "" {
				if err != nil || res.Reset != 1 || len(ic.Entries()) != 1 {
					t.Fatalf("%+v, err %v: want one reset and the entry", res, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// TestRemovalAfterRetention (§7 v3): a server's removal applies only
// once the retention less a tenth has run since the copy first held the
// id (else it is counted early and the id kept), and the copy drops by
// itself what it has held for the retention and a tenth.
func TestRemovalAfterRetention(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	pages := map[uint64]*wire.Index{
		0: {Next: 1, Entries: []wire.IndexEntry{entry(1)}},
		1: {Next: 2, Removed: [][32]byte{{1}}},
	}
	h := &server{primary: prim, serve: func(_ peer.ID, cur uint64) (*wire.Index, error) {
		if pg := pages[cur]; pg != nil {
			return pg, nil
		}
		return &wire.Index{Next: cur}, nil
	}}
	ic := &Copy{Host: h}
	ic.SetHours(10)
	ic.SetClock(func() time.Time { return now })
	sync := func() Result {
		t.Helper()
		res, err := ic.SyncFrom(context.Background(), prim)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	sync()
	now = now.Add(9*time.Hour - time.Minute) // less than 10 h less a tenth
	if res := sync(); res.Early != 1 || res.Removed != 0 || len(ic.Entries()) != 1 {
		t.Fatalf("early removal: %+v, %d entries", res, len(ic.Entries()))
	}
	ic.SetCursor(prim, 1)
	now = now.Add(2 * time.Minute)
	if res := sync(); res.Removed != 1 || len(ic.Entries()) != 0 {
		t.Fatalf("due removal: %+v, %d entries", res, len(ic.Entries()))
	}

	// Expiry: held 11 h (10 h and a tenth) goes; less stays.
	ic2 := &Copy{Host: &server{primary: prim}}
	ic2.SetHours(10)
	t0 := time.Unix(2_000_000, 0)
	ic2.SetClock(func() time.Time { return t0 })
	ic2.Fill([32]byte{7}, []byte("m"))
	ic2.SetClock(func() time.Time { return t0.Add(11*time.Hour - time.Second) })
	ic2.Expire()
	if _, ok := ic2.Manifest([32]byte{7}); !ok {
		t.Fatal("expired before the retention and a tenth")
	}
	ic2.SetClock(func() time.Time { return t0.Add(11*time.Hour + time.Second) })
	ic2.Expire()
	if _, ok := ic2.Manifest([32]byte{7}); ok {
		t.Fatal("kept past the retention and a tenth")
	}
}

// TestSyncBoundedPages: a server that always has more stops the sync at
// MaxPages.
func TestSyncBoundedPages(t *testing.T) {
	h := &server{primary: prim, serve: func(_ peer.ID, cur uint64) (*wire.Index, error) {
		return &wire.Index{Next: cur + 1, More: true}, nil
	}}
	ic := &Copy{Host: h}
	res, err := ic.SyncFrom(context.Background(), prim)
	if err == nil || res.Pages != MaxPages || h.calls != MaxPages {
		t.Fatalf("%d pages, %d calls, err %v; want %d and an error", res.Pages, h.calls, err, MaxPages)
	}
}

// TestBusyServerAskedAgain: a page refused for want of a slot is asked
// again after a short random wait, at most retries times.
func TestBusyServerAskedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &server{primary: prim, serve: func(peer.ID, uint64) (*wire.Index, error) { return nil, proto.ErrIndexBusy }}
		ic := &Copy{Host: h}
		start := time.Now()
		_, err := ic.Page(context.Background(), prim, 0)
		if !errors.Is(err, proto.ErrIndexBusy) || h.calls != 1+retries {
			t.Fatalf("%d calls, err %v; want %d", h.calls, err, 1+retries)
		}
		if took := time.Since(start); took > retries*proto.CheckpointSyncTime/16+time.Second {
			t.Fatalf("retries took %v", took)
		}
		calls := 0
		h.serve = func(peer.ID, uint64) (*wire.Index, error) {
			if calls++; calls < 3 {
				return nil, proto.ErrIndexBusy
			}
			return &wire.Index{}, nil
		}
		h.calls = 0
		if _, err := ic.Page(context.Background(), prim, 0); err != nil || h.calls != 3 {
			t.Fatalf("%d calls, err %v; want 3 and a page", h.calls, err)
		}
	})
}
