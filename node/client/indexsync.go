package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

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
// What a client asks never depends on what its user wants, on what a
// server answered, or on this client's past: every client syncs
// everything, at the start of every epoch and at each checkpoint
// (checkpoint.go), from every server of the epoch's chain at once, its
// primary first. The copy is the union, so one honest chain server, which
// holds every manifest the signed lists named, makes it whole, and no
// client checks its copy against lists only some clients hold. The
// cursor only says how much of a server's log this client already read,
// which follows from when it synced before, not from any file: the
// primary's is stored, and the primary knows its client anyway; another
// server's is kept for this run only (cursorOf), so it tells that server
// only what it saw of this peer id's syncs.
//
// The index retention is a group constant (Params.IndexHours), so a
// client knows when a manifest is due to leave: it applies a server's
// removal only once the retention, less a tenth, has run since it first
// held the id (an early removal would be a way to take a manifest out of
// one client's copy), and drops by itself what it has held for the
// retention and a tenth (a server that never sends the removal cannot
// keep the copy growing).

// Bounds on one sync, whatever a server sends.
const (
	// maxIndexPages bounds the pages of one sync from one server: at
	// wire.IndexPageBytes each, far more than any index a group keeps.
	maxIndexPages = 4096
)

// removalDue and expired give the retention's bounds for an id first
// held at seen, with a tenth of slack for the servers' clocks and when
// each client synced.
func removalDue(seen, now time.Time, hours uint32) bool {
	ret := time.Duration(hours) * time.Hour
	return hours > 0 && now.Sub(seen) >= ret-ret/10
}

// indexCopy is a client's synced copy of the public index. It is touched
// by one sync at a time (Client.syncMu); the maps it hands out are copies.
type indexCopy struct {
	loaded  bool
	synced  bool // a sync of this run succeeded
	entries map[[32]byte]IndexEntry
	mans    map[[32]byte][]byte
	seen    map[[32]byte]time.Time // when each id was first held
	cursors map[peer.ID]uint64     // the primary's, as stored
	// others are this run's cursors at the other chain servers, never
	// stored; pruned to the epoch's chain at each epoch's start.
	others map[peer.ID]uint64
	// mu guards the copy while the syncs from several servers apply
	// their pages at once (syncMu held by their caller).
	mu sync.Mutex
	// hours is the group's index retention, from the last descriptor
	// (0: unknown or for good: no removal is applied).
	hours uint32
	// clock, if set, replaces time.Now (tests).
	clock func() time.Time
}

func (ic *indexCopy) now() time.Time {
	if ic.clock != nil {
		return ic.clock()
	}
	return time.Now()
}

// syncResult says what one sync from one server read.
type syncResult struct {
	pages, bytes   int
	entries, mans  int
	removed, reset int
	closings       int
	early          int // removals not applied: the retention has not run
}

// loadIndexCopy loads the stored copy once (the client database, if any).
func (c *Client) loadIndexCopy() {
	ic := &c.icopy
	if ic.loaded {
		return
	}
	ic.loaded = true
	ic.entries, ic.mans, ic.cursors = map[[32]byte]IndexEntry{}, map[[32]byte][]byte{}, map[peer.ID]uint64{}
	ic.others = map[peer.ID]uint64{}
	ic.seen = map[[32]byte]time.Time{}
	if c.db == nil {
		return
	}
	entries, mans, seen, err := c.db.SyncedIndex()
	if err != nil {
		c.log.Warn("stored index copy unreadable; syncing it again", "err", err)
		return
	}
	for _, e := range entries {
		ic.entries[e.FileID] = e
	}
	maps.Copy(ic.mans, mans)
	maps.Copy(ic.seen, seen)
}

// expireIndex drops from the copy what it has held for the group's index
// retention and a tenth.
func (c *Client) expireIndex() {
	ic := &c.icopy
	if ic.hours == 0 {
		return
	}
	ret := time.Duration(ic.hours) * time.Hour
	before := ic.now().Add(-(ret + ret/10))
	if c.db != nil {
		if _, err := c.db.ExpireIndex(before); err != nil {
			c.log.Warn("expire the synced index", "err", err)
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

// cursorOf returns the cursor of server p: the primary's, stored, or
// this run's at any other server. A stored cursor at another server would
// be where this client's last sync from it ended, a number of that
// server's log that links the client's syncs there across its runs (its
// peer id is fresh each run); within a run, that server saw each of this
// peer id's syncs itself. Call with icopy.mu held.
func (c *Client) cursorOf(p peer.ID) uint64 {
	ic := &c.icopy
	if p != c.primary {
		return ic.others[p]
	}
	if n, ok := ic.cursors[p]; ok {
		return n
	}
	if c.db != nil {
		n, err := c.db.IndexCursor([]byte(p))
		if err == nil {
			ic.cursors[p] = n
			return n
		}
		c.log.Warn("stored index cursor unreadable", "err", err)
	}
	return 0
}

// callPeer sends a request to server p (the primary or another server of
// the chain, whose addresses the descriptor gives).
func (c *Client) callPeer(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return c.callTo(ctx, p, r)
}

// syncIndexFrom reads every index change server p logged after this
// client's cursor there, page by page, into the copy; syncMu held.
// Records the pages carry go to the control's hook only with closings
// set.
func (c *Client) syncIndexFrom(ctx context.Context, p peer.ID) (syncResult, error) {
	return c.syncIndexPages(ctx, p, p == c.primary)
}

func (c *Client) syncIndexPages(ctx context.Context, p peer.ID, closings bool) (syncResult, error) {
	var res syncResult
	ic := &c.icopy
	ic.mu.Lock()
	c.loadIndexCopy()
	cur := c.cursorOf(p)
	ic.mu.Unlock()
	for {
		if res.pages >= maxIndexPages {
			return res, fmt.Errorf("node: index sync from %s: more than %d pages", p.ShortString(), maxIndexPages)
		}
		rep, err := c.indexPage(ctx, p, cur)
		if err != nil {
			return res, fmt.Errorf("node: index sync from %s: %w", p.ShortString(), err)
		}
		var pg wire.Index
		if err := pg.Unmarshal(rep, wire.MaxIndexPageItems); err != nil {
			return res, fmt.Errorf("node: index sync from %s: %w", p.ShortString(), err)
		}
		res.pages++
		res.bytes += len(rep)
		ic.mu.Lock()
		done, err := c.applyPage(p, &pg, &cur, &res, closings)
		ic.mu.Unlock()
		if err != nil || done {
			return res, err
		}
	}
}

// applyPage takes one page from p into the copy and moves the cursor
// on; it reports whether the sync is done. Call with icopy.mu held.
func (c *Client) applyPage(p peer.ID, pg *wire.Index, curp *uint64, res *syncResult, closings bool) (bool, error) {
	ic := &c.icopy
	cur := *curp
	{
		items := len(pg.Entries) + len(pg.Manifests) + len(pg.Removed) + len(pg.Closings)
		if pg.Next < cur && items == 0 {
			// The server's log is shorter than this cursor: its store
			// was replaced. Read it again from the start (once).
			if res.reset > 0 {
				return false, fmt.Errorf("node: index sync from %s: cursor moved back twice", p.ShortString())
			}
			res.reset++
			*curp = 0
			return false, nil
		}
		if pg.Next < cur || (pg.Next == cur && (pg.More || items > 0)) {
			return false, fmt.Errorf("node: index sync from %s: page does not move the cursor on (%d after %d)", p.ShortString(), pg.Next, cur)
		}
		if len(ic.mans)+len(pg.Manifests) > proto.MaxIndexItems || len(ic.entries)+len(pg.Entries) > proto.MaxIndexItems {
			return false, fmt.Errorf("node: index sync from %s: the copy would pass %d items", p.ShortString(), proto.MaxIndexItems)
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
				res.early++
			}
		}
		if c.db != nil {
			// Another server's cursor is not stored (cursorOf): the
			// store gets the primary's number for it, which never moves.
			at := pg.Next
			if p != c.primary {
				at = c.cursorOf(c.primary)
			}
			if err := c.db.ApplyIndex([]byte(c.primary), at, now, entries, mans, removed); err != nil {
				return false, err
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
		if closings {
			for _, b := range pg.Closings {
				c.hookIndexClosing(b)
			}
		}
		res.closings += len(pg.Closings)
		res.entries += len(entries)
		res.mans += len(mans)
		res.removed += len(removed)
		*curp = pg.Next
		if p == c.primary {
			ic.cursors[p] = pg.Next
		} else {
			ic.others[p] = pg.Next
		}
		return !pg.More, nil
	}
}

// chanLock is a mutex whose waiters wait on a channel. A sync holds
// Client.syncMu while it waits out a busy server (indexPage), and a
// goroutine blocked on a sync.Mutex is not durably blocked in a
// testing/synctest bubble: the virtual clock would stop with the sync's
// timer pending. Its zero value is unlocked.
type chanLock struct {
	once sync.Once
	ch   chan struct{}
}

func (l *chanLock) Lock() {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	l.ch <- struct{}{}
}

func (l *chanLock) Unlock() { <-l.ch }

// indexRetries bounds how often a client asks a server that answered
// ErrIndexBusy again for one page.
const indexRetries = 6

// indexRetryDelay draws the wait before a busy server is asked again:
// uniform below a sixteenth of proto.CheckpointSyncTime, so that the
// retries end within a checkpoint's half for the primary and the clients
// refused at once spread out. Fresh randomness, none of the client's
// CSPRNG stream: only the retry's timing depends on it.
func indexRetryDelay() time.Duration {
	return time.Millisecond + rand.N(proto.CheckpointSyncTime/16)
}

// indexPage asks p for the page of its index log after cur. Every client
// of a primary syncs at the same rounds (checkpoint.go), more of them at
// once than a server's slots, so a busy server is asked again.
func (c *Client) indexPage(ctx context.Context, p peer.ID, cur uint64) ([]byte, error) {
	req := transport.Request{Proto: transport.ProtoClient, Type: wire.TypeIndexReq, Body: (&wire.IndexReq{Cursor: cur}).Marshal(), Timeout: transport.ShortTimeout}
	rep, err := c.callPeer(ctx, p, req)
	for try := 0; try < indexRetries && errors.Is(err, proto.ErrIndexBusy); try++ {
		select {
		case <-time.After(indexRetryDelay()):
		case <-ctx.Done():
			return nil, err
		}
		rep, err = c.callPeer(ctx, p, req)
	}
	return rep, err
}

// missingFrom returns the ids of want that the copy lacks; call with
// syncMu held and no sync running.
func (c *Client) missingFrom(want [][32]byte) [][32]byte {
	var out [][32]byte
	for _, id := range want {
		if _, ok := c.icopy.mans[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// syncIndexEpoch is the sync at an epoch's start: from the primary, then
// from every other server of the chain at once (group: the epoch's
// descriptor, for their addresses), whatever the primary gave. It returns
// the copy's entries and manifests, and the manifests the other servers
// added that the primary's copy lacked (the primary's gaps).
func (c *Client) syncIndexEpoch(ctx context.Context, group []wire.GroupEntry, hours uint32) (idx []IndexEntry, mans map[[32]byte][]byte, gaps int, err error) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	ic := &c.icopy
	ic.mu.Lock()
	c.loadIndexCopy()
	ic.hours = hours
	c.expireIndex()
	// Cursors only at this chain's servers: the map stays bounded.
	inChain := map[peer.ID]bool{}
	for _, g := range group {
		if p, perr := peer.IDFromBytes(g.PeerID); perr == nil {
			inChain[p] = true
		}
	}
	for p := range ic.others {
		if !inChain[p] {
			delete(ic.others, p)
		}
	}
	ic.mu.Unlock()
	start := time.Now()
	res, err := c.syncIndexFrom(ctx, c.primary)
	if err != nil {
		c.log.Info("index sync from the primary failed", "err", err)
	} else {
		c.log.Debug("index synced", "pages", res.pages, "bytes", res.bytes, "manifests", res.mans, "removed", res.removed, "early_removals", res.early, "took", time.Since(start))
	}
	before := len(ic.mans)
	octx, cancel := context.WithTimeout(ctx, proto.CheckpointSyncTime)
	ok := c.syncOthers(octx, group)
	cancel()
	if err == nil {
		// Gaps are the primary's only when its sync went through.
		gaps = max(0, len(ic.mans)-before)
	}
	if err != nil && !ok && !ic.synced {
		return nil, nil, gaps, err
	}
	ic.synced = true
	idx = make([]IndexEntry, 0, len(ic.entries))
	for _, e := range ic.entries {
		idx = append(idx, e)
	}
	return idx, maps.Clone(ic.mans), gaps, nil
}

// syncOthers syncs from every server of the chain but the primary, all at
// once, each from this run's cursor there; it reports whether one
// succeeded. The test control that takes its primary's copy as whole
// asks none. Call with syncMu held.
func (c *Client) syncOthers(ctx context.Context, group []wire.GroupEntry) bool {
	if c.hookNoGapFill() {
		return false
	}
	// The old rule's control takes records from another server only
	// where that rule asked one.
	closings := c.hookOwnFallback()
	if c.hookOwnRule() && !closings {
		return false
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := false
	for _, g := range group {
		p, perr := peer.IDFromBytes(g.PeerID)
		if perr != nil || p == c.primary || p == c.h.ID() {
			continue
		}
		c.addAddrs(p, g.Addrs)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.syncIndexPages(ctx, p, closings); err != nil {
				c.log.Info("index sync from another server failed", "err", err)
				return
			}
			mu.Lock()
			ok = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ok
}

// addAddrs tells the client's host where server p listens.
func (c *Client) addAddrs(p peer.ID, addrs [][]byte) {
	var out []ma.Multiaddr
	for _, b := range addrs {
		if a, err := ma.NewMultiaddrBytes(b); err == nil {
			out = append(out, a)
		}
	}
	c.h.AddAddrs(p, out, time.Hour)
}
