package client

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/client/internal/status"
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
	st.Paused = c.q.paused()
	st.AnonymitySet, st.ChunkSize = c.anon, c.b
	if c.epoch == nil {
		st.Waiting = c.notes.Reason(false, c.pres.Holding)
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
		at, rounds0, moved0 := c.notes.Started()
		st.EpochRounds = c.stats.Rounds - rounds0
		if el := time.Since(at); st.EpochRounds > 0 {
			st.RoundTime = el / time.Duration(st.EpochRounds)
			k := int(e.v.Desc.Params.K)
			st.Throughput = float64(st.EpochRounds*(1+k)*c.b) / el.Seconds()
			st.Goodput = float64((c.stats.Uploaded+c.stats.Fetched-moved0)*c.b) / el.Seconds()
		}
	}
	return st
}

// WaitReason says what a job of this client waits for, if it waits: an
// epoch to open (and about how long), or the presence and anonymity rules
// that hold jobs; "" while jobs run (c.mu not held).
func (c *Client) WaitReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notes.Reason(c.epoch != nil, c.pres.Holding)
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

// withdraw takes what of a cancelled share job is still queued out of the
// queue and reports how many chunks it took and whether the file's root
// manifest (id root) was among them.
func (q *queue) withdraw(job *shareJob, root [32]byte) (dropped int, rootDropped bool) {
	kept := q.up[:0]
	for _, u := range q.up {
		if u.job == job {
			dropped++
			rootDropped = rootDropped || u.c.ID == root
			continue
		}
		kept = append(kept, u)
	}
	clear(q.up[len(kept):])
	q.up = kept
	// Items sealed in this epoch's onions are not put back at its end,
	// nor is the file encrypted again (resend.go).
	clear(job.left)
	job.cancelled, job.plain = true, nil
	return dropped, rootDropped
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
