package client

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client/internal/status"
	"github.com/riffle-net/riffle/node/client/internal/waitline"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// ClientStatus is what a client reports about itself (internal/status).
type ClientStatus = status.ClientStatus

// Status returns the client's status.
func (c *Client) Status() ClientStatus {
	st := ClientStatus{Server: c.cfg.Server, Primary: c.primary.String(), Require: []string{}, DataDir: c.cfg.DataDir, MinAnonymity: c.cfg.MinAnonymity, AcceptBudgetDrops: c.cfg.AcceptBudgetDrops}
	for _, r := range c.cfg.Require {
		st.Require = append(st.Require, r.String())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st.Stats = c.stats
	st.Paused = c.pausedJobs()
	st.AnonymitySet, st.ChunkSize = c.anon, c.b
	if c.epoch == nil {
		st.Waiting = c.waitReasonLocked()
	}
	st.MaxRate = c.cfg.MaxRate
	if send, recv, ok := c.group.Worst(); ok {
		st.GroupSendPerHour, st.GroupRecvPerHour = send, recv
	}
	st.SentPerHour, st.RecvPerHour = c.group.Moved(time.Now())
	if e := c.epoch; e != nil {
		st.Epoch = hex.EncodeToString(e.v.ID[:])
		for i, p := range e.v.Chain {
			cs := proto.ChainServer{ID: p.String()}
			if i < len(e.v.Desc.Group) {
				cs.Nick = string(e.v.Desc.Group[i].Nick)
			}
			st.Chain = append(st.Chain, cs)
		}
		st.Waiting = ""
		st.EpochRounds = c.stats.Rounds - c.epochRounds0
		if el := time.Since(c.epochAt); st.EpochRounds > 0 {
			st.RoundTime = el / time.Duration(st.EpochRounds)
			k := int(e.v.Desc.Params.K)
			st.Throughput = float64(st.EpochRounds*(1+k)*c.b) / el.Seconds()
			st.Goodput = float64((c.stats.Uploaded+c.stats.Fetched-c.epochMoved0)*c.b) / el.Seconds()
		}
	}
	return st
}

// noteEpoch records the start of an epoch for Status (c.mu held).
func (c *Client) noteEpoch() {
	c.epochAt, c.epochRounds0, c.waiting = time.Now(), c.stats.Rounds, ""
	c.epochMoved0 = c.stats.Uploaded + c.stats.Fetched
}

// noteWait records why the client is not in an epoch, for Status and for
// the progress of jobs that wait (c.mu not held).
func (c *Client) noteWait(why string) {
	c.mu.Lock()
	changed := c.waiting != why
	c.waiting = why
	c.mu.Unlock()
	if changed && why != "" {
		c.progress("%s", why)
	}
}

// WaitReason says what a job of this client waits for, if it waits: an
// epoch to open (and about how long), or the presence and anonymity rules
// that hold jobs; "" while jobs run (c.mu not held).
func (c *Client) WaitReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitReasonLocked()
}

// waitReasonLocked is WaitReason with c.mu held.
func (c *Client) waitReasonLocked() string {
	if c.epoch != nil {
		if c.holdJobs() {
			return fmt.Sprintf("holding the job: this epoch has %d clients registered through servers this client trusts, below the minimum of %d asked for (--min-anonymity); sending cover until a larger epoch", c.trusted, c.cfg.MinAnonymity)
		}
		if !c.jobsReady() {
			line := fmt.Sprintf("holding the job: this client has been present %d of the %d full epochs it waits before any job, so that when a job runs says nothing about when it came; sending cover meanwhile", c.fullEpochs, c.jobWait)
			if c.epochLen > 0 {
				line += fmt.Sprintf(" (about %s more: epochs here last about %s)", waitline.RoundUp(time.Duration(c.jobWait-c.fullEpochs)*c.epochLen), waitline.RoundUp(c.epochLen))
			}
			return line
		}
		return ""
	}
	w := waitline.Between{Waiting: c.waiting, State: c.gstate, StateAt: c.gstateAt, EpochEnd: c.epochEnd, Joining: c.joining, TookPart: c.tookPart}
	return w.Reason(time.Now())
}

// CheckHandover reports why a job asking for primary, the required
// servers req and a minimum anonymity set must not be handed to a client
// of status st (status.CheckHandover).
func CheckHandover(st *ClientStatus, primary peer.ID, req []peer.ID, minAnonymity int) error {
	return status.CheckHandover(st, primary, req, minAnonymity)
}

// CheckBudgetHandover reports why a job that does (accept) or does not
// take chains that dropped a server for its refusal budget may not go to
// the running client of status st (status.CheckBudgetHandover).
func CheckBudgetHandover(st *ClientStatus, accept bool) error {
	return status.CheckBudgetHandover(st, accept)
}

// cancelShare withdraws what of a cancelled share job is still queued and
// says whether the file will be published anyway: its root manifest (id
// link.ID) was already sealed into an onion, which is sent and re-sent
// whatever happens next (§5.1).
func (c *Client) cancelShare(job *shareJob, link chunker.Link, total int, cause error) error {
	c.mu.Lock()
	kept := c.upQ[:0]
	dropped, rootDropped := 0, false
	for _, u := range c.upQ {
		if u.job == job {
			dropped++
			rootDropped = rootDropped || u.c.ID == [32]byte(link.ID)
			continue
		}
		kept = append(kept, u)
	}
	clear(c.upQ[len(kept):])
	c.upQ = kept
	// Items sealed in this epoch's onions are not put back at its end,
	// nor is the file encrypted again (resend.go).
	clear(job.left)
	job.cancelled, job.plain = true, nil
	c.mu.Unlock()
	if rootDropped || total == 0 {
		return fmt.Errorf("%w: share withdrawn, %d of %d chunks had been sent; the file is not published, no link", cause, total-dropped, total)
	}
	return fmt.Errorf("%w: every chunk had been sent before the interrupt, so the file will be published as %s", cause, link)
}

// chunkSizeWaiting is ChunkSize with a progress event every
// progressEvery while no epoch runs, saying what the job waits for.
func (c *Client) chunkSizeWaiting(ctx context.Context, kind, name string) (int, error) {
	start := time.Now()
	t := time.NewTicker(progressEvery)
	defer t.Stop()
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
			return 0, fmt.Errorf("%w: nothing was sent, the file is not published, no link (the job was %s)", ctx.Err(), c.WaitReason())
		case <-t.C:
			c.jobEvent(ctx, JobEvent{Kind: kind, Phase: PhaseWaiting, Name: name, Waiting: c.WaitReason(), Elapsed: time.Since(start)})
		}
	}
}

// progressEvery is the period of a waiting job's progress lines.
const progressEvery = 5 * time.Second

// notIndexed says, for a get whose manifest has not come, whether the
// file is absent from the index synced at the start of the epoch.
func (c *Client) notIndexed(id chunker.ID) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.indexSynced {
		return ""
	}
	// A private file has no entry (its sealed root names nothing), only
	// its manifest chunks.
	if _, ok := c.manifests[[32]byte(id)]; ok {
		return ""
	}
	for _, e := range c.index {
		if e.FileID == [32]byte(id) {
			return ""
		}
	}
	return fmt.Sprintf("file %s is not in the index synced at the start of the last epoch: not published, or not yet; waiting", id)
}

// countReader counts the bytes of a shared file, for its last progress
// line (the file's size, not the chunks with the manifest).
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// holdJobs reports whether the current epoch's anonymity set, counted
// over the servers this client trusts (client_anon.go), is below the
// user's minimum: jobs then wait, and the client sends cover (c.mu held).
func (c *Client) holdJobs() bool {
	return c.trusted < c.cfg.MinAnonymity
}
