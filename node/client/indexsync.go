package client

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/client/internal/indexsync"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The index sync at an epoch's start and the checks of the copy (§7 v3);
// the copy, its cursors and the sync from one server are package
// internal/indexsync's.
//
// What a client asks never depends on what its user wants: every client
// syncs everything, at the start of every epoch, from its primary; the
// cursor only says how much of the primary's log this client already
// read, which follows from when it synced before, not from any file, and
// which the primary, which knows its client, learns nothing from. A sync
// from another server starts from 0 (indexsync's cursorOf).
// Nor on its history: the manifests it checks its copy against are those
// the signed lists of the epoch it is in name, the same for every client
// of that epoch, at its checkpoints and once after its last list
// (checkpoint.go); a manifest the primary's copy lacks is asked of every
// other server of the chain at once. The sync at an epoch's start checks
// the ids of the window's epochs and of the epoch before (checkWindow),
// the same for every client of the epoch; if it fails, it is asked of
// every other server at once.

// indexHost is what the synced copy asks of its client.
type indexHost struct{ c *Client }

func (h indexHost) Primary() peer.ID { return h.c.primary }
func (h indexHost) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return h.c.callTo(ctx, p, r)
}
func (h indexHost) Log() *slog.Logger  { return h.c.log }
func (h indexHost) Closing(rec []byte) { hooks.IndexClosing(&h.c.hk, rec) }
func (h indexHost) NoGapFill() bool    { return hooks.NoGapFill(&h.c.hk) }
func (h indexHost) Self() peer.ID      { return h.c.h.ID() }
func (h indexHost) Listens(p peer.ID, addrs [][]byte) {
	addAddrs(h.c.h, p, addrs)
}
func (h indexHost) DB() indexsync.DB {
	if h.c.db == nil {
		return nil // not a nil *store.ClientDB in the interface
	}
	return h.c.db
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
	c.icopy.Lock()
	defer c.icopy.Unlock()
	c.icopy.Load()
	c.icopy.SetHours(hours)
	c.icopy.Expire()
	start := time.Now()
	res, err := c.icopy.SyncFrom(ctx, c.primary)
	if err != nil {
		c.log.Info("index sync from the primary failed", "err", err)
	} else {
		c.log.Debug("index synced", "pages", res.Pages, "bytes", res.Bytes, "manifests", res.Mans, "removed", res.Removed, "early_removals", res.Early, "took", time.Since(start))
	}
	if err != nil || hooks.OwnFallback(&c.hk) {
		if c.icopy.SyncOthers(ctx, group) {
			err = nil
		}
	}
	if err != nil && !c.icopy.Synced() {
		return nil, nil, err
	}
	c.icopy.MarkSynced()
	c.checkWindow(ctx, group, err == nil)
	return c.icopy.Entries(), c.icopy.Manifests(), nil
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
// gap, else each another server gave. Call with c.icopy held.
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
	missing := c.icopy.Missing(due)
	if len(missing) == 0 {
		return
	}
	found := c.icopy.FromOthers(ctx, group, missing)
	gaps := 0
	for _, id := range missing {
		b, ok := found[id]
		if primaryOK || ok {
			gaps++
		}
		if ok {
			// Kept in memory, as the end check's fills.
			c.icopy.Fill(id, b)
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

// addAddrs tells host h where server p listens.
func addAddrs(h transport.Host, p peer.ID, addrs [][]byte) {
	var out []ma.Multiaddr
	for _, b := range addrs {
		if a, err := ma.NewMultiaddrBytes(b); err == nil {
			out = append(out, a)
		}
	}
	h.AddAddrs(p, out, time.Hour)
}

// syncedIndex is the index as synced at the start of the last epoch (§7
// v3), under Client.mu.
type syncedIndex struct {
	entries []IndexEntry
	// manifests are the manifest chunks of the synced index, by id (§6.4
	// v3): a get takes every manifest from here, never from an answer.
	manifests map[[32]byte][]byte
	// synced: entries hold a sync (ls waits for the first); syncs counts
	// the syncs taken, so that a get can tell how many lacked its file
	// (unlisted.go).
	synced bool
	syncs  int
}

// notIndexed says, for a get whose manifest has not come, whether the
// file is absent from the index synced at the start of the epoch; call
// with c.mu held.
func (x *syncedIndex) notIndexed(id chunker.ID) string {
	if !x.synced {
		return ""
	}
	// A private file has no entry (its sealed root names nothing), only
	// its manifest chunks.
	if _, ok := x.manifests[[32]byte(id)]; ok {
		return ""
	}
	for _, e := range x.entries {
		if e.FileID == [32]byte(id) {
			return ""
		}
	}
	return fmt.Sprintf("file %s is not in the index synced at the start of the last epoch: not published, or not yet; waiting", id)
}
