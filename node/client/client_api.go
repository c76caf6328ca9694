package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client/internal/progress"
)

// ChunkSize waits for an epoch and returns its chunk size b.
func (c *Client) ChunkSize(ctx context.Context) (int, error) {
	for {
		c.mu.Lock()
		b, ch := c.b, c.changed
		c.mu.Unlock()
		if b > 0 {
			return b, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Share uploads the stream r as a file named name, one chunk per round,
// and returns its link once every chunk is in a published list.
func (c *Client) Share(ctx context.Context, r io.Reader, name string, encrypt bool) (chunker.Link, error) {
	h, err := c.StartShare(ctx, r, name, encrypt)
	if err != nil {
		return chunker.Link{}, err
	}
	return c.FollowShare(ctx, h, name, time.Now())
}

// FollowShare waits for the share of h, queued at start, reporting its
// progress, and returns its link; on ctx's end it withdraws the share.
func (c *Client) FollowShare(ctx context.Context, h *ShareHandle, name string, start time.Time) (chunker.Link, error) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	paused := false
	for {
		select {
		case <-h.Done():
			link, total, warnings, err := h.Result()
			if err != nil {
				return chunker.Link{}, err
			}
			c.jobEvent(ctx, JobEvent{Kind: "share", Phase: PhaseShared, Name: name, Link: link.String(), Bytes: h.Bytes, Total: total, Earlier: h.resumed(), Unconfirmed: h.unconfirmed(), Elapsed: time.Since(start)})
			for _, w := range warnings {
				c.jobEvent(ctx, JobEvent{Kind: "share", Phase: PhaseWarning, Name: name, Note: w})
			}
			return link, nil
		case <-ctx.Done():
			return h.Link, h.Cancel(ctx.Err())
		case <-t.C:
			link, _, _, _ := h.Result()
			if why := h.job.ep.pauseLine(&c.mu, link.ID); why != "" {
				// Said once a pause: the job waits for its user.
				if !paused {
					c.jobEvent(ctx, JobEvent{Kind: "share", Phase: PhasePaused, Name: name, Paused: why})
				}
				paused = true
				continue
			}
			paused = false
			if why := c.WaitReason(); why != "" {
				c.jobEvent(ctx, JobEvent{Kind: "share", Phase: PhaseWaiting, Name: name, Waiting: why})
				continue
			}
			c.mu.Lock()
			rounds := c.stats.Rounds
			c.mu.Unlock()
			_, total, _, _ := h.Result()
			c.jobEvent(ctx, progress.Moving("share", name, total-h.Left(), total, rounds, h.b, time.Since(start)))
		}
	}
}

// Get fetches the file of link into dir and returns its path. A partial
// download in dir is resumed (the chunker verifies what is on disk).
func (c *Client) Get(ctx context.Context, link chunker.Link, dir string) (string, error) {
	g := &getJob{link: link, dir: dir, root: true, done: make(chan struct{}), ep: newJobEpochs(&c.hk, maxEpochsOf(ctx))}
	c.mu.Lock()
	c.q.wants[link.ID] = g
	mans, syncs0 := c.idx.manifests, c.idx.syncs
	c.mu.Unlock()
	unlisted, bounded := unlistedEpochsOf(ctx)
	// Every manifest of the file comes from the synced index (§6.4 v3):
	// the one synced already, else the next.
	c.local.push(func() { c.openFromIndex(g, mans) })
	// drop withdraws the get once its asker gave up.
	drop := func() {
		c.mu.Lock()
		if c.q.wants[g.link.ID] == g {
			delete(c.q.wants, g.link.ID)
		}
		g.cancelled = true
		asm := g.asm
		c.mu.Unlock()
		if asm != nil {
			// The partial file stays: a later Get into the same directory
			// verifies it and fetches only what is missing.
			asm.Close()
		}
	}
	start := time.Now()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	paused := false
	for {
		select {
		case <-g.done:
			if g.err == nil {
				c.jobEvent(ctx, JobEvent{Kind: "get", Phase: PhaseFetched, Name: filepath.Base(g.path), Path: g.path, Elapsed: time.Since(start)})
			}
			return g.path, g.err
		case <-t.C:
			if why := g.ep.pauseLine(&c.mu, link.ID); why != "" {
				if !paused {
					c.jobEvent(ctx, JobEvent{Kind: "get", Phase: PhasePaused, Name: link.ID.String(), Paused: why})
				}
				paused = true
				continue
			}
			paused = false
			c.mu.Lock()
			held, total, rounds, b, name, asm := 0, 0, c.stats.Rounds, c.b, "", g.asm
			c.mu.Unlock()
			// Outside the client's lock: the assembler's own lock may be
			// held by a chunk being written.
			if asm != nil {
				held, total = asm.Progress()
				name = asm.Name()
			}
			if total == 0 {
				c.mu.Lock()
				absent := c.idx.notIndexed(link.ID)
				c.mu.Unlock()
				if absent != "" {
					if err := c.unlisted(link.ID, syncs0, unlisted, bounded); err != nil {
						drop()
						return "", err
					}
					c.jobEvent(ctx, JobEvent{Kind: "get", Phase: PhaseWaiting, Name: link.ID.String(), Waiting: absent})
				} else if why := c.WaitReason(); why != "" {
					c.jobEvent(ctx, JobEvent{Kind: "get", Phase: PhaseWaiting, Name: link.ID.String(), Waiting: why})
				} else {
					c.jobEvent(ctx, JobEvent{Kind: "get", Phase: PhaseWaiting, Name: link.ID.String(), Round: rounds,
						Waiting: fmt.Sprintf("waiting for its manifest in the index synced at the next epoch, round %d", rounds)})
				}
				continue
			}
			c.jobEvent(ctx, progress.Moving("get", name, held, total, rounds, b, time.Since(start)))
		case <-ctx.Done():
			drop()
			return "", ctx.Err()
		}
	}
}

// Index syncs the public index from the primary (§7: always all of it,
// never per-file look-ups; from the cursor this client holds) and returns
// its entries.
func (c *Client) Index(ctx context.Context) ([]IndexEntry, error) {
	// Not into another network's copy (netbind.go).
	select {
	case <-c.bind.Bound():
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, errors.New("node: client closed")
	}
	c.icopy.Lock()
	defer c.icopy.Unlock()
	if _, err := c.icopy.SyncFrom(ctx, c.primary); err != nil {
		return nil, err
	}
	return c.icopy.Entries(), nil
}

var _ network.Stream

// SyncedIndex returns the public index as synced at the start of the
// current epoch (§7), for local search without any look-up.
func (c *Client) SyncedIndex() []IndexEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]IndexEntry(nil), c.idx.entries...)
}

// WaitSyncedIndex returns the synced index once there is one (the first
// sync is at the start of the client's first epoch), without any request.
func (c *Client) WaitSyncedIndex(ctx context.Context) ([]IndexEntry, error) {
	for {
		c.mu.Lock()
		if c.idx.synced {
			defer c.mu.Unlock()
			return append([]IndexEntry(nil), c.idx.entries...), nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
