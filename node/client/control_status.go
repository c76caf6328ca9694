package client

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/riffle-net/riffle/internal/wire"

	"github.com/libp2p/go-libp2p/core/peer"

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
	st.Paused = c.q.paused()
	st.AnonymitySet, st.ChunkSize = c.anon, c.b
	if c.epoch == nil {
		st.Waiting = c.notes.reason(false, &c.pres)
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
		at, rounds0, moved0 := c.notes.started()
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
	return c.notes.reason(c.epoch != nil, &c.pres)
}

// epochNotes is what the client notes of its epochs for Status and for
// the line a waiting job shows, under its own lock, taken after Client.mu
// where both are and before presence's.
type epochNotes struct {
	minAnon int // ClientConfig.MinAnonymity

	mu sync.Mutex
	// trusted is the current epoch's anonymity set counted over the
	// servers this client trusts (client_anon.go).
	trusted int
	// When the current epoch began, the round count then and the chunks
	// uploaded and fetched before it; when the last one ended and how long
	// it lasted.
	at              time.Time
	rounds0, moved0 int
	end             time.Time
	last            time.Duration
	// waiting is why no epoch runs; gstate the primary's last answer on
	// the group's state, at gstateAt (waitstate.go).
	waiting  string
	gstate   wire.State
	gstateAt time.Time
	// joining is the number of the epoch this client registers in, until
	// it holds the final descriptor or gives up (0: none); tookPart the
	// number of the last epoch it held the final descriptor of.
	joining, tookPart uint64
}

// begin notes the start of epoch number n, rounds and moved the client's
// counts of rounds and of chunks moved then.
func (n *epochNotes) begin(number uint64, rounds, moved int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.at, n.rounds0, n.moved0, n.waiting = time.Now(), rounds, moved, ""
	n.tookPart = max(n.tookPart, number)
}

// started is what begin noted.
func (n *epochNotes) started() (at time.Time, rounds0, moved0 int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.at, n.rounds0, n.moved0
}

// ended notes the end of the epoch taken part in.
func (n *epochNotes) ended() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.end = time.Now()
	if !n.at.IsZero() {
		n.last = n.end.Sub(n.at)
	}
}

// epochLen is how long the last epoch taken part in lasted.
func (n *epochNotes) epochLen() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last
}

// join notes the number of the epoch the client registers in (0: none).
func (n *epochNotes) join(number uint64) {
	n.mu.Lock()
	n.joining = number
	n.mu.Unlock()
}

// setWait notes why the client is not in an epoch and reports whether
// that changed.
func (n *epochNotes) setWait(why string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := n.waiting != why
	n.waiting = why
	return changed
}

// setState notes the primary's answer on the group's state.
func (n *epochNotes) setState(st wire.State) {
	n.mu.Lock()
	n.gstate, n.gstateAt = st, time.Now()
	n.mu.Unlock()
}

// setTrusted notes the current epoch's anonymity set over trusted servers.
func (n *epochNotes) setTrusted(k int) {
	n.mu.Lock()
	n.trusted = k
	n.mu.Unlock()
}

// hold reports whether the current epoch's anonymity set, counted over
// the servers this client trusts (client_anon.go), is below the user's
// minimum: jobs then wait, and the client sends cover.
func (n *epochNotes) hold() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.trusted < n.minAnon
}

// reason is WaitReason of a client in an epoch (inEpoch) or between
// epochs, whose presence count is p.
func (n *epochNotes) reason(inEpoch bool, p *presence) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if inEpoch {
		if n.trusted < n.minAnon {
			return fmt.Sprintf("holding the job: this epoch has %d clients registered through servers this client trusts, below the minimum of %d asked for (--min-anonymity); sending cover until a larger epoch", n.trusted, n.minAnon)
		}
		return p.holding(n.last)
	}
	w := waitline.Between{Waiting: n.waiting, State: n.gstate, StateAt: n.gstateAt, EpochEnd: n.end, Joining: n.joining, TookPart: n.tookPart}
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
