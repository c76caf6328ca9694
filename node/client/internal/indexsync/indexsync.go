// Package indexsync is a client's synced copy of the public index and
// its sync from one server (docs/protocol.md §7 v3): the copy and its
// cursors (Copy, under its own lock), the pages read from a server and
// the rules a page must keep, the retention's removals and expiry, and
// the retries at a busy server, and what is asked of the chain's other
// servers (others.go). Which manifests the client checks the copy against
// (the window's and the checkpoints') is node/client's (indexsync.go,
// checkpoint.go); the network and the database are its Host's.
package indexsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// Incremental index sync (§7 v3). Each server logs the changes to its
// public index in order (store index-log: a manifest chunk or an entry
// added, a manifest removed), numbered by a sequence of its own. A client
// keeps a synced copy of the index and, for every server it has synced
// from, the number of the last change it holds there (its cursor); at
// each epoch's start it asks for the changes after that cursor, page by
// page (each at most wire.IndexPageBytes), and adds them to its copy.
// With a client database the copy and the cursors are stored, page by
// page in one transaction each, so a restarted client goes on from its
// cursors and reads only what is new.
//
// The index retention is a group constant (Params.IndexHours), so a
// client knows when a manifest is due to leave: it applies a server's
// removal only once the retention, less a tenth, has run since it first
// held the id (an early removal would be a way to take a manifest out of
// one client's copy), and drops by itself what it has held for the
// retention and a tenth (a server that never sends the removal cannot
// keep the copy growing).

// Host is what the copy asks of its client.
type Host interface {
	// Primary is the client's primary, the one server whose cursor the
	// copy keeps (cursorOf).
	Primary() peer.ID
	// Call sends a request to server p.
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	// DB is the client's database, nil without one; read under the
	// copy's lock, so the client installs another under it.
	DB() DB
	Log() *slog.Logger
	// Self is this client's peer id; Listens tells its host where
	// server p listens (a descriptor's addresses).
	Self() peer.ID
	Listens(p peer.ID, addrs [][]byte)
	// Closing is the tests' hook on a closing record a page carries: a
	// client takes closing records from the window, never from here;
	// NoGapFill, the tests' hook that asks no other server for what the
	// copy lacks.
	Closing(rec []byte)
	NoGapFill() bool
}

// DB is where the copy and its cursors are stored (store.ClientDB).
type DB interface {
	SyncedIndex() ([]store.IndexEntry, map[[32]byte][]byte, map[[32]byte]time.Time, error)
	ExpireIndex(before time.Time) ([]store.ID, error)
	IndexCursor(server []byte) (uint64, error)
	ApplyIndex(server []byte, cursor uint64, now time.Time, entries []store.IndexEntry, mans []store.Manifest, removed []store.ID) error
}

// Bounds on one sync, whatever a server sends.
const (
	// MaxPages bounds the pages of one sync from one server: at
	// wire.IndexPageBytes each, far more than any index a group keeps.
	MaxPages = 4096
)

// removalDue and expired give the retention's bounds for an id first
// held at seen, with a tenth of slack for the servers' clocks and when
// each client synced.
func removalDue(seen, now time.Time, hours uint32) bool {
	ret := time.Duration(hours) * time.Hour
	return hours > 0 && now.Sub(seen) >= ret-ret/10
}

// Copy is a client's synced copy of the public index. It is touched by
// one sync at a time: its methods but Page are called with its lock held
// (Lock); the maps it hands out are copies. Its zero value with a Host
// is empty and unloaded.
type Copy struct {
	Host Host
	mu   chanLock

	loaded  bool
	synced  bool // a sync of this run succeeded
	entries map[[32]byte]store.IndexEntry
	mans    map[[32]byte][]byte
	seen    map[[32]byte]time.Time // when each id was first held
	cursors map[peer.ID]uint64
	// hours is the group's index retention, from the last descriptor
	// (0: unknown or for good: no removal is applied).
	hours uint32
	// clock, if set, replaces time.Now (tests).
	clock func() time.Time
}

// Lock and Unlock take and give back the copy for one sync.
func (ic *Copy) Lock()   { ic.mu.Lock() }
func (ic *Copy) Unlock() { ic.mu.Unlock() }

func (ic *Copy) now() time.Time {
	if ic.clock != nil {
		return ic.clock()
	}
	return time.Now()
}

// Result says what one sync from one server read.
type Result struct {
	Pages, Bytes   int
	Entries, Mans  int
	Removed, Reset int
	Closings       int
	Early          int // removals not applied: the retention has not run
}

// Load loads the stored copy once (the client database, if any).
func (ic *Copy) Load() {
	if ic.loaded {
		return
	}
	ic.loaded = true
	ic.entries, ic.mans, ic.cursors = map[[32]byte]store.IndexEntry{}, map[[32]byte][]byte{}, map[peer.ID]uint64{}
	ic.seen = map[[32]byte]time.Time{}
	db := ic.Host.DB()
	if db == nil {
		return
	}
	entries, mans, seen, err := db.SyncedIndex()
	if err != nil {
		ic.Host.Log().Warn("stored index copy unreadable; syncing it again", "err", err)
		return
	}
	for _, e := range entries {
		ic.entries[e.FileID] = e
	}
	maps.Copy(ic.mans, mans)
	maps.Copy(ic.seen, seen)
}

// Expire drops from the copy what it has held for the group's index
// retention and a tenth.
func (ic *Copy) Expire() {
	if ic.hours == 0 {
		return
	}
	ret := time.Duration(ic.hours) * time.Hour
	before := ic.now().Add(-(ret + ret/10))
	if db := ic.Host.DB(); db != nil {
		if _, err := db.ExpireIndex(before); err != nil {
			ic.Host.Log().Warn("expire the synced index", "err", err)
			return
		}
	}
	for id, t := range ic.seen {
		if t.Before(before) {
			delete(ic.seen, id)
			delete(ic.mans, id)
			delete(ic.entries, id)
		}
	}
}

// cursorOf returns the cursor of server p: the primary's, or 0 for any
// other server. A cursor at another server would be where this client's
// last sync from it ended, a number of that server's log that links the
// client's syncs there across its runs (its peer id is fresh each run);
// from 0, every client's sync from another server reads alike.
func (ic *Copy) cursorOf(p peer.ID) uint64 {
	if p != ic.Host.Primary() {
		return 0
	}
	if n, ok := ic.cursors[p]; ok {
		return n
	}
	if db := ic.Host.DB(); db != nil {
		n, err := db.IndexCursor([]byte(p))
		if err == nil {
			ic.cursors[p] = n
			return n
		}
		ic.Host.Log().Warn("stored index cursor unreadable", "err", err)
	}
	return 0
}

// SyncFrom reads every index change server p logged after this client's
// cursor there, page by page, into the copy.
func (ic *Copy) SyncFrom(ctx context.Context, p peer.ID) (Result, error) {
	return ic.SyncVia(ctx, p, nil)
}

// SyncVia is SyncFrom; with mu set, each page goes into the copy under
// mu, so that several servers' syncs run at once.
func (ic *Copy) SyncVia(ctx context.Context, p peer.ID, mu *sync.Mutex) (Result, error) {
	var res Result
	ic.Load()
	cur := ic.cursorOf(p)
	for {
		if res.Pages >= MaxPages {
			return res, fmt.Errorf("node: index sync from %s: more than %d pages", p.ShortString(), MaxPages)
		}
		rep, err := ic.Page(ctx, p, cur)
		if err != nil {
			return res, fmt.Errorf("node: index sync from %s: %w", p.ShortString(), err)
		}
		var pg wire.Index
		if err := pg.Unmarshal(rep, wire.MaxIndexPageItems); err != nil {
			return res, fmt.Errorf("node: index sync from %s: %w", p.ShortString(), err)
		}
		res.Pages++
		res.Bytes += len(rep)
		if mu != nil {
			mu.Lock()
		}
		more, next, err := ic.apply(p, &pg, cur, &res)
		if mu != nil {
			mu.Unlock()
		}
		if err != nil {
			return res, err
		}
		cur = next
		if !more {
			return res, nil
		}
	}
}

// apply adds page pg of server p, asked after cursor cur, to the copy;
// it returns whether more follows and the cursor to ask from next.
func (ic *Copy) apply(p peer.ID, pg *wire.Index, cur uint64, res *Result) (bool, uint64, error) {
	items := len(pg.Entries) + len(pg.Manifests) + len(pg.Removed) + len(pg.Closings)
	if pg.Next < cur && items == 0 {
		// The server's log is shorter than this cursor: its store
		// was replaced. Read it again from the start (once).
		if res.Reset > 0 {
			return false, cur, fmt.Errorf("node: index sync from %s: cursor moved back twice", p.ShortString())
		}
		res.Reset++
		return true, 0, nil
	}
	if pg.Next < cur || (pg.Next == cur && (pg.More || items > 0)) {
		return false, cur, fmt.Errorf("node: index sync from %s: page does not move the cursor on (%d after %d)", p.ShortString(), pg.Next, cur)
	}
	if len(ic.mans)+len(pg.Manifests) > proto.MaxIndexItems || len(ic.entries)+len(pg.Entries) > proto.MaxIndexItems {
		return false, cur, fmt.Errorf("node: index sync from %s: the copy would pass %d items", p.ShortString(), proto.MaxIndexItems)
	}
	// A manifest is kept only if it parses (§6.4 v3): a server
	// cannot fill the copy with what no get could open.
	var mans []store.Manifest
	for id, b := range proto.SyncedManifests(pg.Manifests) {
		mans = append(mans, store.Manifest{ID: id, Data: b})
	}
	entries := proto.IndexFromWire(pg.Entries)
	now := ic.now()
	var removed []store.ID
	for _, id := range pg.Removed {
		if seen, ok := ic.seen[id]; ok && removalDue(seen, now, ic.hours) {
			removed = append(removed, id)
		} else if ok {
			res.Early++
		}
	}
	if db := ic.Host.DB(); db != nil {
		if err := db.ApplyIndex([]byte(p), pg.Next, now, entries, mans, removed); err != nil {
			return false, cur, err
		}
	}
	for _, id := range removed {
		delete(ic.mans, id)
		delete(ic.entries, id)
		delete(ic.seen, id)
	}
	for _, m := range mans {
		if _, ok := ic.mans[m.ID]; !ok {
			ic.mans[m.ID] = m.Data
		}
		if _, ok := ic.seen[m.ID]; !ok {
			ic.seen[m.ID] = now
		}
	}
	for _, e := range entries {
		if _, ok := ic.entries[e.FileID]; !ok {
			ic.entries[e.FileID] = e
		}
		if _, ok := ic.seen[e.FileID]; !ok {
			ic.seen[e.FileID] = now
		}
	}
	// A client takes closing records from the window, which it asks
	// every chain server for (window_client.go), never from here.
	for _, b := range pg.Closings {
		ic.Host.Closing(b)
	}
	res.Closings += len(pg.Closings)
	res.Entries += len(entries)
	res.Mans += len(mans)
	res.Removed += len(removed)
	ic.cursors[p] = pg.Next
	return pg.More, pg.Next, nil
}

// chanLock is a mutex whose waiters wait on a channel. A sync holds
// the copy while it waits out a busy server (Page), and a goroutine
// blocked on a sync.Mutex is not durably blocked in a testing/synctest
// bubble: the virtual clock would stop with the sync's timer pending.
// Its zero value is unlocked.
type chanLock struct {
	once sync.Once
	ch   chan struct{}
}

func (l *chanLock) Lock() {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	l.ch <- struct{}{}
}

func (l *chanLock) Unlock() { <-l.ch }

// retries bounds how often a client asks a server that answered
// ErrIndexBusy again for one page.
const retries = 6

// RetryDelay draws the wait before a busy server is asked again: uniform
// below a sixteenth of proto.CheckpointSyncTime, so that the retries end
// within a checkpoint's half for the primary and the clients refused at
// once spread out. Fresh randomness, none of the client's CSPRNG stream:
// only the retry's timing depends on it.
func RetryDelay() time.Duration {
	return time.Millisecond + rand.N(proto.CheckpointSyncTime/16)
}

// Page asks p for the page of its index log after cur. Every client of a
// primary syncs at the same rounds (node/client's checkpoint.go), more of
// them at once than a server's slots, so a busy server is asked again.
// It touches no state of the copy: no lock needed.
func (ic *Copy) Page(ctx context.Context, p peer.ID, cur uint64) ([]byte, error) {
	req := transport.Request{Proto: transport.ProtoClient, Type: wire.TypeIndexReq, Body: (&wire.IndexReq{Cursor: cur}).Marshal(), Timeout: transport.ShortTimeout}
	rep, err := ic.Host.Call(ctx, p, req)
	for try := 0; try < retries && errors.Is(err, proto.ErrIndexBusy); try++ {
		select {
		case <-time.After(RetryDelay()):
		case <-ctx.Done():
			return nil, err
		}
		rep, err = ic.Host.Call(ctx, p, req)
	}
	return rep, err
}

// Missing returns the ids of want that the copy lacks.
func (ic *Copy) Missing(want [][32]byte) [][32]byte {
	var out [][32]byte
	for _, id := range want {
		if _, ok := ic.mans[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}
