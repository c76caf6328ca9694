package indexsync

import (
	"context"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The chain's other servers (§6.4 v3): what the primary's copy lacks, or
// all of it when the primary's sync fails, is asked of every other server
// of the chain at once, each from cursor 0.

// AtOthers runs fn for every server of group but the primary and this
// client, all at once, each told where the server listens, and waits for
// them: a client that turns from its primary asks every other server
// alike, so that what it holds is the honest server's answer. It touches
// no state of the copy.
func (ic *Copy) AtOthers(group []wire.GroupEntry, fn func(p peer.ID)) {
	var wg sync.WaitGroup
	for _, g := range group {
		p, err := peer.IDFromBytes(g.PeerID)
		if err != nil || p == ic.Host.Primary() || p == ic.Host.Self() {
			continue
		}
		ic.Host.Listens(p, g.Addrs)
		wg.Go(func() { fn(p) })
	}
	wg.Wait()
}

// SyncOthers syncs the whole index from every server of the chain but
// the primary at once, each from 0 (cursorOf), into the copy; it reports
// whether one of them went through. Call with the copy's lock held.
func (ic *Copy) SyncOthers(ctx context.Context, group []wire.GroupEntry) bool {
	var mu sync.Mutex
	ok := false
	ic.AtOthers(group, func(p peer.ID) {
		if _, err := ic.SyncVia(ctx, p, &mu); err != nil {
			ic.Host.Log().Info("index sync from another server failed", "err", err)
			return
		}
		mu.Lock()
		ok = true
		mu.Unlock()
	})
	return ok
}

// SyncNamed syncs the index from the primary and, for the named ids of
// due its copy lacks, asks every other server of the chain at once,
// within proto.CheckpointSyncTime; it returns the named ids it holds,
// and those the primary's copy lacked when its sync went through, or,
// when it stalled or failed, those the others gave. It takes the copy's
// lock itself, not while it asks the others.
func (ic *Copy) SyncNamed(ctx context.Context, group []wire.GroupEntry, due [][32]byte) (map[[32]byte][]byte, [][32]byte) {
	ctx, cancel := context.WithTimeout(ctx, proto.CheckpointSyncTime)
	defer cancel()
	half, cancelHalf := context.WithTimeout(ctx, proto.CheckpointSyncTime/2)
	ic.Lock()
	_, err := ic.SyncFrom(half, ic.Host.Primary())
	cancelHalf()
	missing := ic.Missing(due)
	ic.Unlock()
	var gaps [][32]byte
	if err != nil {
		ic.Host.Log().Info("checkpoint index sync from the primary failed", "err", err)
	} else if !ic.Host.NoGapFill() {
		gaps = missing
	}
	var found map[[32]byte][]byte
	if len(missing) > 0 && !ic.Host.NoGapFill() {
		found = ic.FromOthers(ctx, group, missing)
	}
	if err != nil {
		// A primary that stalls its sync withholds as one that leaves
		// manifests out: those the others gave are its gaps.
		for _, id := range missing {
			if found[id] != nil {
				gaps = append(gaps, id)
			}
		}
	}
	ic.Lock()
	defer ic.Unlock()
	held := map[[32]byte][]byte{}
	for _, id := range due {
		if b, ok := ic.Manifest(id); ok {
			held[id] = b
		} else if b, ok := found[id]; ok {
			// Kept in memory: the next epoch's sync checks its lists.
			ic.Fill(id, b)
			held[id] = b
		}
	}
	return held, gaps
}

// FromOthers asks every server of the chain but the primary at once for
// its index, each from cursor 0 as every client's sync from another
// server reads, and keeps the manifests of want that check (they parse
// and hash to their id), from whichever answers. It touches no state of
// the copy.
func (ic *Copy) FromOthers(ctx context.Context, group []wire.GroupEntry, want [][32]byte) map[[32]byte][]byte {
	wanted := map[[32]byte]bool{}
	for _, id := range want {
		wanted[id] = true
	}
	var mu sync.Mutex
	found := map[[32]byte][]byte{}
	// Done once every wanted id came, from whichever servers: a server
	// that stalls delays nothing then.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ic.AtOthers(group, func(p peer.ID) {
		var cur uint64
		for range MaxPages {
			rep, err := ic.Page(ctx, p, cur)
			if err != nil {
				ic.Host.Log().Info("checkpoint index sync from another server failed", "err", err)
				return
			}
			var pg wire.Index
			if err := pg.Unmarshal(rep, wire.MaxIndexPageItems); err != nil || pg.Next <= cur && pg.More {
				return
			}
			mu.Lock()
			for id, b := range proto.SyncedManifests(pg.Manifests) {
				if wanted[id] {
					found[id] = b
				}
			}
			if len(found) == len(wanted) {
				cancel()
			}
			mu.Unlock()
			if !pg.More || pg.Next <= cur {
				return
			}
			cur = pg.Next
		}
	})
	return found
}
