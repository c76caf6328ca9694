package client

import (
	"context"
	"fmt"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client/internal/jobdb"
	"github.com/riffle-net/riffle/store"
)

// An interrupted share resumes (docs/anonymity.md, "What your client's
// behaviour depends on"). The client database keeps, per share until it
// finishes, its link and every chunk that went out: marked sent in the
// transaction that stores the round's onion before it is sent (every
// round stores one, cover or not, so a chunk costs no extra disk sync),
// and published once a signed list shows it. Run again on the same bytes,
// the share queues only the chunks that never went out. A chunk that went
// out without its list seen is not sent again, as for a round that ended
// without a record (§5.2 v3): it counts as published and the user is
// told. A private file is encrypted again under the key of the recorded
// link, so the same plaintext gives the same chunks; its record is found
// by a hash of the plaintext, name and chunk size.

// resumeShare records job as resumable, or, when a record of the same
// share is there, takes out of items the chunks that went out before and
// says so. It returns the items to queue.
func (c *Client) resumeShare(ctx context.Context, job *shareJob, res *jobdb.Resumable, link chunker.Link, items []upItem) []upItem {
	if res.Key == nil {
		return items
	}
	job.resume = res.Key
	if !res.Found || res.Link != link.String() {
		if res.Found {
			c.db.DropShareResume(*res.Key)
		}
		if err := c.db.StartShareResume(*res.Key, link.String(), time.Now()); err != nil {
			c.log.Warn("share not kept for resuming", "err", err)
			job.resume = nil
		}
		return items
	}
	kept := items[:0]
	sent, unconfirmed := 0, 0
	for _, u := range items {
		st := res.States[store.ID(u.c.ID)]
		if st == 0 {
			kept = append(kept, u)
			continue
		}
		delete(job.left, u.c.ID)
		sent++
		if st < store.ChunkPublished {
			unconfirmed++
		}
	}
	clear(items[len(kept):])
	if sent == 0 {
		return kept
	}
	job.resumed = sent
	c.jobEvent(ctx, JobEvent{Kind: "share", Phase: PhaseResuming, Name: job.name, Done: sent, Total: len(items)})
	if unconfirmed > 0 {
		msg := fmt.Sprintf("share %s: %d chunk(s) went out just before the earlier run stopped, without their published list seen here; "+
			"they count as published and are not sent again (a re-send under a new pseudonym could be linked to the first), "+
			"so the file may be incomplete: share it again once this run is done if a get of its link does not finish", job.name, unconfirmed)
		c.mu.Lock()
		job.unconfirmed += unconfirmed
		job.warnings = append(job.warnings, msg)
		c.mu.Unlock()
	}
	return kept
}

// markPublished records a resumable job's chunk as published, and drops
// the record once the job has nothing left; call with c.mu held.
func (c *Client) markPublished(j *shareJob, id [32]byte) {
	if j.resume == nil || c.db == nil {
		return
	}
	m := store.ShareMark{Key: *j.resume, Chunk: id}
	c.local.push(func() {
		if err := c.db.MarkSharePublished(m); err != nil {
			c.log.Warn("share progress not kept", "err", err)
		}
	})
}

// finishResumable forgets a finished job's record; call with c.mu held.
func (c *Client) finishResumable(j *shareJob) {
	if j.resume == nil || c.db == nil {
		return
	}
	key := *j.resume
	j.resume = nil
	c.local.push(func() {
		if err := c.db.DropShareResume(key); err != nil {
			c.log.Warn("finished share not forgotten", "err", err)
		}
	})
}

// shareMark is the mark stored with the onion of a round that carries u.
func shareMark(u *upItem) *store.ShareMark {
	if u == nil || u.job == nil || u.job.resume == nil {
		return nil
	}
	return &store.ShareMark{Key: *u.job.resume, Chunk: u.c.ID}
}
