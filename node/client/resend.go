package client

import (
	"bytes"
	"fmt"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/client/internal/resend"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// Re-sending the chunks of a round that did not publish them (docs/
// protocol.md §5.2 v3): the rule is internal/resend's; the queue here
// applies it.

// resendHold is how many rounds a chunk, and the requests, of a void
// round wait before they go out again in the same epoch (resend.Hold).
const resendHold = resend.Hold

// reask is a void round's requests: kept in flight, so not asked again,
// until the onion of round at.
type reask struct {
	at  uint32
	ids [][32]byte
}

// resendFrom is the first round of e whose onion may carry again what
// round r's signed list did not publish (resendHold).
func (e *cepoch) resendFrom(r uint32) uint32 {
	c := e.c
	if hooks.ResendAtOnce(&c.hk) {
		return 0 // the rule before, the tests' control: the next onion
	}
	return r + uint32(e.v.Desc.Params.W) + resendHold
}

// heldBack reports whether u, seen unpublished in a round of e, still
// waits in round r (resendHold). Call with c.mu held.
func (e *cepoch) heldBack(u *upItem, r uint32) bool {
	return u.seen && e.v != nil && u.seenAt.epoch == e.epochID() && r < e.resendFrom(u.seenAt.round)
}

// releaseReasks lets the void rounds' requests whose hold is over in
// round r be asked again. Call with c.mu held.
func (e *cepoch) releaseReasks(r uint32) {
	c := e.c
	keep := e.reask[:0]
	for _, q := range e.reask {
		if r < q.at {
			keep = append(keep, q)
			continue
		}
		for _, id := range q.ids {
			delete(c.q.inflight, id)
		}
	}
	e.reask = keep
}

// settleEpoch settles the chunks of epoch e that were not seen published,
// as the epoch ends; a chunk whose round gave no list
// counts as published, and one that a signed list lacked waits for the
// epoch's closing record (settleClosings). It returns the private jobs to
// encrypt again (their chunks are out of the queue).
func (q *queue) settleEpoch(e *cepoch) []*shareJob {
	// Chunks whose round gave no list: no record, so they count as
	// published.
	lost := map[*shareJob]int{}
	for _, u := range e.ups {
		if u == nil || u.job == nil || !u.job.left[u.c.ID] {
			continue
		}
		delete(u.job.left, u.c.ID)
		u.job.unconfirmed++
		lost[u.job]++
		q.stats.Unconfirmed++
	}
	clear(e.ups)
	// Manifests published and never indexed in the epoch: sent again in
	// a later epoch (§6.4 v3), in the order they were sent.
	var again []upItem
	for _, u := range e.manWait {
		if u.job == nil || u.job.left[u.c.ID] {
			again = append(again, *u)
		}
	}
	q.up = append(again, q.up...)
	e.manWait = nil
	for j, n := range lost {
		q.warnUnconfirmed(j, n)
	}
	// Chunks a signed list showed missing and that did not go out again
	// in this epoch cross to another epoch only on the epoch's closing
	// record (settleClosings): until it comes, they wait.
	for i := range q.up {
		u := &q.up[i]
		if u.seen && u.job != nil && !u.awaiting {
			u.awaiting = true
		}
	}
	return q.dropSettled(lost, nil)
}

// A client's side of the closing records (docs/protocol.md §5.2 and §6.3
// v3). A client takes them only from epoch N's window (window_client.go):
// the records of the epochs of number at most N−2 that its walk back from
// N's descriptor checked, from the replies of every server of N's and
// N−1's chains. Which records it holds is then the same for every client
// of N, whatever epochs it attended or when a record would have reached
// it; it asks for them on no other occasion. They settle the chunks that
// wait for one as the client registers in N (oneEpoch).

// closeWaitMax bounds the windows in which a chunk waits for its
// epoch's closing record (resend.CloseWaitMax).
const closeWaitMax = resend.CloseWaitMax

// settleClosings applies the closing records of the window of the epoch
// of number n (checked against their epochs' chains, by epoch id) to the
// chunks that await one. A record that shows the
// chunk's round void, or published with the very list that lacked the
// chunk, lets resend.Rule decide; a record that shows anything else, or no
// record in the window of number e+1+closeWaitMax or later, leaves the
// chunk counted as published, and the user is told. Whether a chunk waits
// on follows from epoch numbers, never from how many epochs this client
// attended meanwhile. It returns the private jobs to encrypt again.
func (q *queue) settleClosings(recs map[[32]byte]*wire.Closing, n uint64) []*shareJob {
	lost := map[*shareJob]int{}
	var again []*shareJob
	for i := range q.up {
		u := &q.up[i]
		if !u.awaiting || u.job == nil {
			continue
		}
		rec := recs[u.seenAt.epoch]
		if rec == nil && !resend.Due(u.seenAt.number, n) {
			continue
		}
		u.awaiting = false
		act := resend.Never
		w := 0
		if rec != nil && resend.Covers(rec, u.seenAt.round, u.seenAt.list) {
			var err error
			act, w, err = resend.Rule(resend.RecordMissing, u.job.private, q.rand)
			if err != nil {
				// No randomness: the safe choice is not to send it at all.
				act = resend.Never
			}
		}
		switch act {
		case resend.Later:
			u.seen, u.wait = false, w
		case resend.Reencrypt:
			if !u.job.reencrypting {
				u.job.reencrypting = true
				again = append(again, u.job)
			}
		default:
			delete(u.job.left, u.c.ID)
			u.job.unconfirmed++
			q.stats.Unconfirmed++
			q.warnUnconfirmed(u.job, 1)
			lost[u.job]++
		}
	}
	return q.dropSettled(lost, again)
}

// awaitClose reports whether a chunk waits for epoch id's closing
// record.
func (q *queue) awaitClose(id [32]byte) bool {
	for i := range q.up {
		if q.up[i].awaiting && q.up[i].seenAt.epoch == id {
			return true
		}
	}
	return false
}

// dropSettled takes out of the queue the chunks that count as published
// and the jobs to encrypt again, and ends the jobs with nothing left.
func (q *queue) dropSettled(lost map[*shareJob]int, again []*shareJob) []*shareJob {
	kept := q.up[:0]
	for _, u := range q.up {
		if u.job != nil && (u.job.reencrypting || !u.job.left[u.c.ID]) {
			continue
		}
		kept = append(kept, u)
	}
	clear(q.up[len(kept):])
	q.up = kept
	for _, j := range again {
		clear(j.left)
	}
	for j := range lost {
		if len(j.left) == 0 && !j.reencrypting {
			j.finish()
		}
	}
	return again
}

// warnUnconfirmed tells the user that n chunks of job j count as published
// without a record that says so. The line names the file and nothing
// about the round or the slot.
func (q *queue) warnUnconfirmed(j *shareJob, n int) {
	msg := fmt.Sprintf("share %s: %d chunk(s) went out in a round that ended without a record signed by every server; "+
		"they count as published and are not sent again (a re-send under a new pseudonym could be linked to this one), "+
		"so the file may be incomplete: share it again later if a get of its link does not finish", j.name, n)
	j.warnings = append(j.warnings, msg)
	q.log.Warn("unconfirmed upload counted as published", "chunks", n)
	q.say("%s", msg)
}

// reencrypt encrypts the plaintext of private job j again under a fresh
// key and queues all its chunks (§5.2 v3): its link has not been shown,
// and the chunks seen before have nothing in common with these. The
// encryption runs without the client's lock.
func (c *Client) reencrypt(j *shareJob) {
	c.mu.Lock()
	plain := j.plain
	c.mu.Unlock()
	var items []upItem
	left := map[[32]byte]bool{}
	var ids []chunker.ID
	link, err := chunker.Share(bytes.NewReader(plain), j.name, "", j.b, chunker.ShareOptions{Encrypt: true, Rand: c.rand}, func(id chunker.ID, chunk []byte) error {
		if !left[id] {
			left[id] = true
			ids = append(ids, id)
			items = append(items, upItem{c: store.Chunk{ID: id, Data: append([]byte(nil), chunk...)}, job: j, manifest: proto.IsManifest(chunk)})
		}
		return nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	j.reencrypting = false
	if j.cancelled {
		return
	}
	if err != nil {
		j.err = fmt.Errorf("node: encrypt %s again: %w", j.name, err)
		c.log.Warn("private share not encrypted again", "err", err)
		j.finish()
		return
	}
	j.left, j.link, j.ids, j.total = left, link, ids, len(items)
	j.reencrypted++
	// A new key: the record of the old link resumes nothing.
	c.finishResumable(j)
	c.q.up = append(c.q.up, items...)
	c.progress("share %s: a round did not publish part of this private file; it is sent again whole under a fresh key", j.name)
	c.notify()
}

// waitedEpoch counts a full epoch off the waits of queued chunks.
func (q *queue) waitedEpoch() {
	for i := range q.up {
		if q.up[i].wait > 0 {
			q.up[i].wait--
		}
	}
}

// ResendWaitMax caps the full epochs a public chunk waits before it is
// sent again (resend.WaitMax).
const ResendWaitMax = resend.WaitMax
