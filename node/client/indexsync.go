package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
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
// What a client asks never depends on what its user wants: every client
// syncs everything, at the start of every epoch, from its primary; the
// cursor only says how much of the primary's log this client already
// read, which follows from when it synced before, not from any file, and
// which the primary, which knows its client, learns nothing from. A sync
// from another server starts from 0 (cursorOf).
// Nor on its history: the manifests it checks its copy against are those
// the signed lists of the epoch it is in name, the same for every client
// of that epoch, at its checkpoints and once after its last list
// (checkpoint.go); a manifest the primary's copy lacks is asked of every
// other server of the chain at once. The sync at an epoch's start checks
// the ids of the window's epochs and of the epoch before (checkWindow),
// the same for every client of the epoch; if it fails, it is asked of
// every other server at once.
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
	cursors map[peer.ID]uint64
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

// cursorOf returns the cursor of server p: the primary's, or 0 for any
// other server. A cursor at another server would be where this client's
// last sync from it ended, a number of that server's log that links the
// client's syncs there across its runs (its peer id is fresh each run);
// from 0, every client's sync from another server reads alike.
func (c *Client) cursorOf(p peer.ID) uint64 {
	if p != c.primary {
		return 0
	}
	ic := &c.icopy
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
// client's cursor there, page by page, into the copy.
func (c *Client) syncIndexFrom(ctx context.Context, p peer.ID) (syncResult, error) {
	return c.syncIndexVia(ctx, p, nil)
}

// syncIndexVia is syncIndexFrom; with mu set, each page goes into the
// copy under mu, so that several servers' syncs run at once.
func (c *Client) syncIndexVia(ctx context.Context, p peer.ID, mu *sync.Mutex) (syncResult, error) {
	var res syncResult
	c.loadIndexCopy()
	cur := c.cursorOf(p)
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
		if mu != nil {
			mu.Lock()
		}
		more, next, err := c.applyPage(p, &pg, cur, &res)
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

// applyPage adds page pg of server p, asked after cursor cur, to the
// copy; it returns whether more follows and the cursor to ask from next.
func (c *Client) applyPage(p peer.ID, pg *wire.Index, cur uint64, res *syncResult) (bool, uint64, error) {
	ic := &c.icopy
	items := len(pg.Entries) + len(pg.Manifests) + len(pg.Removed) + len(pg.Closings)
	if pg.Next < cur && items == 0 {
		// The server's log is shorter than this cursor: its store
		// was replaced. Read it again from the start (once).
		if res.reset > 0 {
			return false, cur, fmt.Errorf("node: index sync from %s: cursor moved back twice", p.ShortString())
		}
		res.reset++
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
			res.early++
		}
	}
	if c.db != nil {
		if err := c.db.ApplyIndex([]byte(p), pg.Next, now, entries, mans, removed); err != nil {
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
		hooks.IndexClosing(&c.hk, b)
	}
	res.closings += len(pg.Closings)
	res.entries += len(entries)
	res.mans += len(mans)
	res.removed += len(removed)
	ic.cursors[p] = pg.Next
	return pg.More, pg.Next, nil
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

// missingFrom returns the ids of want that the copy lacks.
func (c *Client) missingFrom(want [][32]byte) [][32]byte {
	var out [][32]byte
	for _, id := range want {
		if _, ok := c.icopy.mans[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// syncIndexEpoch is the sync at an epoch's start (group: the epoch's
// descriptor, for the servers' addresses): once the last epoch's end
// check is done (endCheck, whose fills the copy then holds), from the
// primary and, if that fails, from every other server of the chain at
// once. It then checks the copy against the manifests the window's pools
// name (checkWindow), the same for every client of the epoch, never
// against those of the epochs it attended before. It returns the copy's
// entries and manifests.
func (c *Client) syncIndexEpoch(ctx context.Context, group []wire.GroupEntry, hours uint32) (idx []IndexEntry, mans map[[32]byte][]byte, err error) {
	c.mu.Lock()
	tail := c.tail
	c.mu.Unlock()
	if tail != nil {
		select {
		case <-tail:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	c.loadIndexCopy()
	c.icopy.hours = hours
	c.expireIndex()
	start := time.Now()
	res, err := c.syncIndexFrom(ctx, c.primary)
	if err != nil {
		c.log.Info("index sync from the primary failed", "err", err)
	} else {
		c.log.Debug("index synced", "pages", res.pages, "bytes", res.bytes, "manifests", res.mans, "removed", res.removed, "early_removals", res.early, "took", time.Since(start))
	}
	if err != nil || hooks.OwnFallback(&c.hk) {
		if c.syncOthers(ctx, group) {
			err = nil
		}
	}
	if err != nil && !c.icopy.synced {
		return nil, nil, err
	}
	c.icopy.synced = true
	c.checkWindow(ctx, group, err == nil)
	idx = make([]IndexEntry, 0, len(c.icopy.entries))
	for _, e := range c.icopy.entries {
		idx = append(idx, e)
	}
	return idx, maps.Clone(c.icopy.mans), nil
}

// checkWindow checks the copy against the manifest ids that the pools of
// the decoy window's epochs name (§6.4 v3), each pinned by its closing
// record, which every chain server of that epoch signed, and those of the
// epoch before (prevcheck.go): the same epochs for every client of the
// epoch, whether it was in them or not (a newcomer, a restarted client,
// one kept out of an epoch). Those the copy lacks are asked of every
// other server of the chain at once; the record of the epoch before, if
// the window's replies lacked it, and the ids are had within half a
// checkpoint's sync time, and counted and told to the user as the end
// check does; with primaryOK (the primary's sync went through) each is a
// gap, else each another server gave. Call with c.syncMu held.
func (c *Client) checkWindow(ctx context.Context, group []wire.GroupEntry, primaryOK bool) {
	if hooks.NoGapFill(&c.hk) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, proto.CheckpointSyncTime/2)
	defer cancel()
	c.mu.Lock()
	eps, prev := slices.Clone(c.decoys.epochs), c.prev
	var n uint64
	if c.epoch != nil {
		n = c.epoch.v.Desc.Number
	}
	c.mu.Unlock()
	if prev != nil && !hooks.NoPrevCheck(&c.hk) {
		if prev.pool == nil {
			c.fetchPrev(ctx, prev)
		}
		if prev.pool != nil {
			eps = append(eps, prev.pool)
		} else {
			c.log.Info("no server of the chains gave the closing record of the epoch before: its manifests are checked at the next epoch's start", "epoch", prev.number)
		}
	}
	due, idless := windowDue(eps)
	if len(idless) > 0 {
		// The record fixes the layout, so every client of the epoch
		// leaves the same epochs unchecked.
		c.log.Info("decoy window: pools signed by an older build name no manifest ids; those epochs' manifests are not checked at this start", "epochs", idless)
	}
	hooks.StartCheck(&c.hk, n, eps)
	missing := c.missingFrom(due)
	if len(missing) == 0 {
		return
	}
	found := c.manifestsFromOthers(ctx, group, missing)
	gaps := 0
	for _, id := range missing {
		b, ok := found[id]
		if primaryOK || ok {
			gaps++
		}
		if ok {
			// Kept in memory, as the end check's fills.
			c.icopy.mans[id] = b
			if _, ok := c.icopy.seen[id]; !ok {
				c.icopy.seen[id] = c.icopy.now()
			}
		}
	}
	c.mu.Lock()
	c.stats.IndexGaps += gaps
	c.stats.IndexFilled += len(found)
	c.mu.Unlock()
	if gaps > 0 {
		c.progress("warning: the index synced from the primary lacks %d manifests that the closing records of the decoy window name (left out: the primary may be testing which files this client wants); %d of them synced from the chain's other servers", gaps, len(found))
	}
}

// windowDue returns the manifest ids the pools of window eps name, each
// once, and the numbers of its epochs whose pools name none by their
// layout (wire.PoolV1, signed by an older build).
func windowDue(eps []*proto.PoolEpoch) (due [][32]byte, idless []uint64) {
	seen := map[[32]byte]bool{}
	for _, e := range eps {
		if e.IDLess {
			idless = append(idless, e.Number)
		}
		for _, id := range e.Manifests {
			if !seen[id] {
				seen[id] = true
				due = append(due, id)
			}
		}
	}
	return due, idless
}

// syncOthers syncs the whole index from every server of the chain but
// the primary at once, each from 0 (cursorOf), into the copy; it reports
// whether one of them went through. Call with c.syncMu held.
func (c *Client) syncOthers(ctx context.Context, group []wire.GroupEntry) bool {
	var mu sync.Mutex
	ok := false
	c.atOthers(group, func(p peer.ID) {
		if _, err := c.syncIndexVia(ctx, p, &mu); err != nil {
			c.log.Info("index sync from another server failed", "err", err)
			return
		}
		mu.Lock()
		ok = true
		mu.Unlock()
	})
	return ok
}

// atOthers runs fn for every server of the chain but the primary, all at
// once, each told where the server listens, and waits for them: a client
// that turns from its primary asks every other server alike, so that
// what it holds is the honest server's answer (§6.4 v3).
func (c *Client) atOthers(group []wire.GroupEntry, fn func(p peer.ID)) {
	var wg sync.WaitGroup
	for _, g := range group {
		p, err := peer.IDFromBytes(g.PeerID)
		if err != nil || p == c.primary || p == c.h.ID() {
			continue
		}
		c.addAddrs(p, g.Addrs)
		wg.Go(func() { fn(p) })
	}
	wg.Wait()
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
