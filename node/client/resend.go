package client

import (
	"bytes"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// Re-sending the chunks of a round that did not publish them (docs/
// protocol.md §5.2 v3, "a void round counts as seen"). Whoever stopped
// the round may have read its payloads (the last servers see plaintexts),
// so the same chunk sent again under another pseudonym would tie the two
// pseudonyms together. Within one epoch a chunk goes out again under the
// same pseudonym, which ties nothing new; when the epoch ends with it
// unsent, it waits for the epoch's closing record (closing.go) and
// resendRule decides.

// resendHold is how many rounds a chunk, and the requests, of a round
// whose signed list did not publish them wait before they go out again in
// the same epoch, counted from the onion sealed when that list came (W
// rounds after the round): the hand-over length. A client that left before
// the list came cannot send them again (its handed-over onions were
// sealed), and the epoch it left ends before its hand-over runs out
// (departure.go), so before any client sends anything of that round
// again: every uploader of the round behaves alike, and whoever stopped
// the round, having read its payloads, can tell the one that left among
// them only by a guess (docs/anonymity.md, "When you come and go").
const resendHold = proto.HandoverMax

// reask is a void round's requests: kept in flight, so not asked again,
// until the onion of round at.
type reask struct {
	at  uint32
	ids [][32]byte
}

// resendFrom is the first round of e whose onion may carry again what
// round r's signed list did not publish (resendHold).
func (c *Client) resendFrom(e *cepoch, r uint32) uint32 {
	if hooks.ResendAtOnce(&c.hk) {
		return 0 // the rule before, the tests' control: the next onion
	}
	return r + uint32(e.v.Desc.Params.W) + resendHold
}

// heldBack reports whether u, seen unpublished in a round of e, still
// waits in round r (resendHold). Call with c.mu held.
func (c *Client) heldBack(e *cepoch, u *upItem, r uint32) bool {
	return u.seen && e.v != nil && u.seenAt.epoch == e.epochID() && r < c.resendFrom(e, u.seenAt.round)
}

// releaseReasks lets the void rounds' requests whose hold is over in
// round r be asked again. Call with c.mu held.
func (c *Client) releaseReasks(e *cepoch, r uint32) {
	keep := e.reask[:0]
	for _, q := range e.reask {
		if r < q.at {
			keep = append(keep, q)
			continue
		}
		for _, id := range q.ids {
			delete(c.inflight, id)
		}
	}
	e.reask = keep
}

// roundRecord is what a client holds, signed by all m servers, about a
// round whose chunk it did not see published.
type roundRecord int

const (
	// recordNone: no signed record of the round (it was void or did not
	// finish before the epoch ended, and no list came).
	recordNone roundRecord = iota
	// recordMissing: the round's list, signed by all m servers, lacks
	// the chunk's id among the ids published; a void list (ListVoid)
	// lacks every id.
	recordMissing
)

// resendAction is what becomes of such a chunk once its epoch has ended.
type resendAction int

const (
	// resendNever: the chunk counts as published and the user is told.
	resendNever resendAction = iota
	// resendLater: a public chunk goes out again after a wait of full
	// epochs, so that the epoch right after says nothing.
	resendLater
	// resendReencrypt: a private file is encrypted again under a fresh
	// key and sent whole; its link has not been shown yet, so the new
	// chunks have nothing in common with the ones seen.
	resendReencrypt
)

// ResendWaitMax caps the full epochs a public chunk waits before it is
// sent again: 1 + G, G geometric with p = ½.
const ResendWaitMax = 4

// resendRule decides the fate of a chunk of a round that ended without
// publishing it, once the epoch is over: without a record signed by all m
// servers it counts as published; with one, a public chunk waits 1 + G
// full epochs (the wait is returned) and a private file is encrypted
// again.
func resendRule(rec roundRecord, private bool, rnd io.Reader) (resendAction, int, error) {
	if rec == recordNone {
		return resendNever, 0, nil
	}
	if private {
		return resendReencrypt, 0, nil
	}
	w := 1
	var b [1]byte
	for w < ResendWaitMax {
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return 0, 0, fmt.Errorf("node: draw a re-send wait: %w", err)
		}
		if b[0]&1 == 0 {
			break
		}
		w++
	}
	return resendLater, w, nil
}

// settleEpoch settles the chunks of epoch e that were not seen published,
// as the epoch ends; call with c.mu held: a chunk whose round gave no list
// counts as published, and one that a signed list lacked waits for the
// epoch's closing record (settleClosings). It returns the private jobs to
// encrypt again (their chunks are out of the queue).
func (c *Client) settleEpoch(e *cepoch) []*shareJob {
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
		c.stats.Unconfirmed++
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
	c.upQ = append(again, c.upQ...)
	e.manWait = nil
	for j, n := range lost {
		c.warnUnconfirmed(j, n)
	}
	// Chunks a signed list showed missing and that did not go out again
	// in this epoch cross to another epoch only on the epoch's closing
	// record (settleClosings): until it comes, they wait.
	for i := range c.upQ {
		u := &c.upQ[i]
		if u.seen && u.job != nil && !u.awaiting {
			u.awaiting = true
		}
	}
	return c.dropSettled(lost, nil)
}

// closeWaitMax bounds the windows (of epoch numbers e+2, e+3, …) in which
// a chunk seen in epoch e waits for e's closing record: without one by
// then, it counts as published.
const closeWaitMax = 3

// settleClosings applies the closing records of the window of the epoch
// of number n (checked against their epochs' chains, by epoch id) to the
// chunks that await one; call with c.mu held. A record that shows the
// chunk's round void, or published with the very list that lacked the
// chunk, lets resendRule decide; a record that shows anything else, or no
// record in the window of number e+1+closeWaitMax or later, leaves the
// chunk counted as published, and the user is told. Whether a chunk waits
// on follows from epoch numbers, never from how many epochs this client
// attended meanwhile. It returns the private jobs to encrypt again.
func (c *Client) settleClosings(recs map[[32]byte]*wire.Closing, n uint64) []*shareJob {
	lost := map[*shareJob]int{}
	var again []*shareJob
	for i := range c.upQ {
		u := &c.upQ[i]
		if !u.awaiting || u.job == nil {
			continue
		}
		rec := recs[u.seenAt.epoch]
		if rec == nil && !recordDue(u.seenAt.number, n) {
			continue
		}
		u.awaiting = false
		act := resendNever
		w := 0
		if rec != nil && closedCovers(rec, u.seenAt) {
			var err error
			act, w, err = resendRule(recordMissing, u.job.private, c.rand)
			if err != nil {
				// No randomness: the safe choice is not to send it at all.
				act = resendNever
			}
		}
		switch act {
		case resendLater:
			u.seen, u.wait = false, w
		case resendReencrypt:
			if !u.job.reencrypting {
				u.job.reencrypting = true
				again = append(again, u.job)
			}
		default:
			delete(u.job.left, u.c.ID)
			u.job.unconfirmed++
			c.stats.Unconfirmed++
			c.warnUnconfirmed(u.job, 1)
			lost[u.job]++
		}
	}
	return c.dropSettled(lost, again)
}

// closedCovers reports whether closing record rec shows the round of s
// void, or published with the list that lacked the chunk.
func closedCovers(rec *wire.Closing, s seenRound) bool {
	if int(s.round) >= len(rec.Rounds) {
		return false
	}
	x := rec.Rounds[s.round]
	return (x.State == wire.ClosedVoid || x.State == wire.ClosedPublished) && x.List == s.list
}

// awaitClose reports whether a chunk waits for epoch id's closing
// record; call with c.mu held.
func (c *Client) awaitClose(id [32]byte) bool {
	for i := range c.upQ {
		if c.upQ[i].awaiting && c.upQ[i].seenAt.epoch == id {
			return true
		}
	}
	return false
}

// dropSettled takes out of the queue the chunks that count as published
// and the jobs to encrypt again, and ends the jobs with nothing left;
// call with c.mu held.
func (c *Client) dropSettled(lost map[*shareJob]int, again []*shareJob) []*shareJob {
	kept := c.upQ[:0]
	for _, u := range c.upQ {
		if u.job != nil && (u.job.reencrypting || !u.job.left[u.c.ID]) {
			continue
		}
		kept = append(kept, u)
	}
	clear(c.upQ[len(kept):])
	c.upQ = kept
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
// without a record that says so; call with c.mu held. The line names the
// file and nothing about the round or the slot.
func (c *Client) warnUnconfirmed(j *shareJob, n int) {
	msg := fmt.Sprintf("share %s: %d chunk(s) went out in a round that ended without a record signed by every server; "+
		"they count as published and are not sent again (a re-send under a new pseudonym could be linked to this one), "+
		"so the file may be incomplete: share it again later if a get of its link does not finish", j.name, n)
	j.warnings = append(j.warnings, msg)
	c.log.Warn("unconfirmed upload counted as published", "chunks", n)
	c.progress("%s", msg)
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
	c.upQ = append(c.upQ, items...)
	c.progress("share %s: a round did not publish part of this private file; it is sent again whole under a fresh key", j.name)
	c.notify()
}

// waitedEpoch counts a full epoch off the waits of queued chunks; call
// with c.mu held.
func (c *Client) waitedEpoch() {
	for i := range c.upQ {
		if c.upQ[i].wait > 0 {
			c.upQ[i].wait--
		}
	}
}
