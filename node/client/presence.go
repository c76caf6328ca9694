package client

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/client/internal/presence"
	"github.com/riffle-net/riffle/node/client/internal/status"
)

// PresenceMin and PresenceMax bound the wait before jobs, in full epochs
// (§5.4 v3; internal/presence).
const PresenceMin, PresenceMax = presence.Min, presence.Max

// Leave leaves the network the way §5.4 asks: once no job is left, after
// a fresh wait of full epochs following the last job (none if it never
// had one), at an epoch's end; with Now, at once. ctx bounds the wait (a
// user who insists cancels it and the client closes at once, its cover
// window filling its slot).
func (c *Client) Leave(ctx context.Context) error {
	if c.cfg.Now {
		return c.Close()
	}
	w, err := presence.Draw(c.rand)
	if err != nil {
		return err
	}
	c.mu.Lock()
	for !c.pres.MayLeave(c.q.busy(), w) {
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return c.Close()
		}
		c.mu.Lock()
	}
	// At an epoch's end: wait for the next full epoch to be counted,
	// unless the client is between epochs.
	target := c.pres.Epochs() + 1
	inEpoch := c.epoch != nil
	c.mu.Unlock()
	for inEpoch {
		c.mu.Lock()
		done := c.pres.Epochs() >= target || c.epoch == nil
		ch := c.changed
		c.mu.Unlock()
		if done {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return c.Close()
		}
	}
	return c.Close()
}

// Long jobs and short epochs (docs/protocol.md §5.4 v3): a job that spans
// epochs is linkable across them by its content, and the intersection of
// those epochs' memberships is its anonymity set; an adversary that ends
// epochs early makes a job span more of them. So a job sends real traffic
// (its chunks, or requests for them) in at most JobEpochs epochs, then
// pauses, sending cover only, until its user resumes it (JobEpochs more) or
// cancels it.
//
// JobEpochs is J, the same for every client so that it is no fingerprint
// (a user may lower it for one job). 8 epochs of the default parameters
// (R = 256 rounds of one 256 KiB chunk and k = 1 request) carry about
// 512 MiB each way, more than most jobs need, and it matches the longest
// presence wait (PresenceMax), so that a job needs no more epochs than a
// client waits before its first.
const JobEpochs = 8

// jobEpochs is a job's count of epochs with real traffic and its
// allowance (c.mu held for all of its methods but pauseLine, which takes it).
type jobEpochs struct {
	used  int      // epochs in which the job sent real traffic
	last  [32]byte // id of the last of them
	limit int      // the allowance: it pauses rather than exceed it
	// paused: it was refused an epoch beyond its allowance, or the
	// client sat an epoch out (sat), and it waits for its user; cover
	// goes out in its place.
	paused, sat bool
}

// newJobEpochs returns the count of a new job whose user asked for at most
// max epochs (0: the client's J, jobJ; more than J: J).
func newJobEpochs(hk *hooks.Hooks, max int) jobEpochs {
	j := jobJ(hk)
	if max <= 0 || max > j {
		max = j
	}
	return jobEpochs{limit: max}
}

// jobJ is the client's J: JobEpochs, or the tests' smaller value.
func jobJ(hk *hooks.Hooks) int {
	if hk != nil {
		if j := hooks.JobEpochs(hk); j > 0 {
			return j
		}
	}
	return JobEpochs
}

// may reports whether the job may send real traffic in epoch id: in an
// epoch it counted already, or in a new one within its allowance. A job
// refused a new epoch pauses.
func (j *jobEpochs) may(id [32]byte) bool {
	if j.used > 0 && j.last == id {
		return true
	}
	limit := j.limit
	if limit == 0 {
		limit = JobEpochs // a job made without newJobEpochs
	}
	if j.used >= limit {
		j.paused = true
		return false
	}
	return !j.paused
}

// sent counts epoch id as one with real traffic of the job.
func (j *jobEpochs) sent(id [32]byte) {
	if j.used == 0 || j.last != id {
		j.used++
		j.last = id
	}
}

// resume lets a paused job go on: for add more epochs if it used its
// allowance, else (a pause after a sit-out) within the allowance it had.
func (j *jobEpochs) resume(add int) {
	if j.limit == 0 {
		j.limit = JobEpochs
	}
	if !j.sat || j.used >= j.limit {
		j.limit = max(j.limit, j.used) + add
	}
	j.paused, j.sat = false, false
}

// reason says why the paused job of file id paused.
func (j *jobEpochs) reason(id chunker.ID) string {
	if j.sat {
		return sitOutPause(id)
	}
	return pauseLine(j.used, id)
}

// sitOutPause says why a job paused after its client sat an epoch out.
func sitOutPause(id chunker.ID) string {
	return fmt.Sprintf("paused: this client sat an epoch out because no server of its chains gave the decoy window; this may be a targeted exclusion of this client "+
		"(an adversary that keeps it out and watches what stops may be testing which job is its); run `riffle resume %s` to go on, or interrupt it to cancel", id)
}

// pauseAll pauses every job until its user resumes it, after the client
// sat an epoch out (no server gave the window): the next epoch's traffic
// of a job would otherwise follow the exclusion.
func (q *queue) pauseAll() {
	for i := range q.up {
		if j := q.up[i].job; j != nil {
			j.ep.paused, j.ep.sat = true, true
		}
	}
	for _, g := range q.wants {
		g.ep.paused, g.ep.sat = true, true
	}
}

// pauseLine says why a job paused and what its user may do.
func pauseLine(used int, id chunker.ID) string {
	return fmt.Sprintf("paused: this job sent real traffic in %d epochs; going on links more epochs' memberships, "+
		"whose intersection is its anonymity set (sending cover only meanwhile); run `riffle resume %s` to allow it %d more epochs, or interrupt it to cancel",
		used, id, JobEpochs)
}

// maxEpochsKey carries a job's lowered allowance in its context.
type maxEpochsKey struct{}

// WithMaxEpochs returns ctx with the share or get job run under it
// allowed at most n epochs with real traffic before it pauses (n at most
// JobEpochs; 0 is JobEpochs).
func WithMaxEpochs(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, maxEpochsKey{}, n)
}

func maxEpochsOf(ctx context.Context) int {
	n, _ := ctx.Value(maxEpochsKey{}).(int)
	return n
}

// PausedJob is a job paused after its allowance of epochs (status's).
type PausedJob = status.PausedJob

// paused lists the paused jobs.
func (q *queue) paused() []PausedJob {
	var out []PausedJob
	seen := map[*shareJob]bool{}
	for _, u := range q.up {
		if j := u.job; j != nil && !seen[j] && j.ep.paused {
			seen[j] = true
			out = append(out, PausedJob{ID: j.link.ID.String(), Kind: "share", Name: j.name, Epochs: j.ep.used, Reason: j.ep.reason(j.link.ID)})
		}
	}
	for id, g := range q.wants {
		if g.ep.paused {
			out = append(out, PausedJob{ID: chunker.ID(id).String(), Kind: "get", Epochs: g.ep.used, Reason: g.ep.reason(chunker.ID(id))})
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].ID < out[k].ID })
	return out
}

// Resume lets the paused jobs of the file whose id is id (every paused job
// if id is "") send real traffic in J more epochs, and returns how many it
// resumed.
func (c *Client) Resume(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.q.resume(id, jobJ(&c.hk))
	if n > 0 {
		c.notify()
	}
	return n
}

// resume lets the paused jobs of file id (all if "") go on for add more
// epochs, and returns how many it resumed.
func (q *queue) resume(id string, add int) int {
	n := 0
	seen := map[*shareJob]bool{}
	for _, u := range q.up {
		if s := u.job; s != nil && !seen[s] && s.ep.paused && (id == "" || s.link.ID.String() == id) {
			seen[s] = true
			s.ep.resume(add)
			n++
		}
	}
	for fid, g := range q.wants {
		if g.ep.paused && (id == "" || chunker.ID(fid).String() == id) {
			g.ep.resume(add)
			n++
		}
	}
	return n
}

// pauseLine returns the pause line of the job if it is paused, or ""; it
// takes mu, the client's lock, itself.
func (j *jobEpochs) pauseLine(mu *sync.Mutex, id chunker.ID) string {
	mu.Lock()
	defer mu.Unlock()
	if !j.paused {
		return ""
	}
	return j.reason(id)
}

// epochID is e's id (zero for the unit tests' bare epochs).
func (e *cepoch) epochID() [32]byte {
	if e.v == nil {
		return [32]byte{}
	}
	return e.v.ID
}

// epochNumber is e's number (zero for the unit tests' bare epochs).
func (e *cepoch) epochNumber() uint64 {
	if e.v == nil || e.v.Desc == nil {
		return 0
	}
	return e.v.Desc.Number
}

// PauseReason says why the job of the file whose id is id paused and what
// its user may do, or "" if no job of that file is paused.
func (c *Client) PauseReason(id chunker.ID) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.q.paused() {
		if p.ID == id.String() {
			return p.Reason
		}
	}
	return ""
}
