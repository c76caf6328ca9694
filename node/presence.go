package node

import (
	"context"
	"io"
)

// Presence independent of the job (docs/protocol.md §5.4 v3): a client
// that comes only for a job, or leaves right after it, dates the job, and
// through the published ids the file. So a long-running client starts a
// queued job only after a wait of full epochs present, counted from its
// arrival, and honours a request to leave only after a fresh wait
// following its last job.
const (
	// PresenceMin and PresenceMax bound the wait in full epochs: 2 + G,
	// G geometric with p = ½, capped at PresenceMax.
	PresenceMin, PresenceMax = 2, 8
)

// drawPresence draws 2 + G full epochs, G geometric with p = ½ (the number
// of 1 bits of random bytes before the first 0), capped at PresenceMax.
func drawPresence(rnd io.Reader) (int, error) {
	w := PresenceMin
	var b [1]byte
	for w < PresenceMax {
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return 0, err
		}
		if b[0]&1 == 0 {
			break
		}
		w++
	}
	return w, nil
}

// jobsReady reports whether this client may carry its jobs' traffic:
// after its arrival wait, or at once with Now; call with c.mu held.
func (c *Client) jobsReady() bool {
	return c.cfg.Now || c.fullEpochs >= c.jobWait
}

// fullEpoch counts an epoch the client held its slot in from the first
// round to the end (whatever ended it), and notes the end of its last
// job; call with c.mu held.
func (c *Client) fullEpoch() {
	c.fullEpochs++
	c.waitedEpoch()
	if c.jobTraffic || c.busy() {
		c.lastJob, c.hadJob = c.fullEpochs, true
	}
	c.jobTraffic = false
	c.notify()
}

// busy reports whether a job is queued or running; call with c.mu held.
func (c *Client) busy() bool {
	return len(c.upQ) > 0 || len(c.wants) > 0
}

// Leave leaves the network the way §5.4 asks: once no job is left, after
// a fresh wait of full epochs following the last job (none if it never
// had one), at an epoch's end; with Now, at once. ctx bounds the wait (a
// user who insists cancels it and the client closes at once, its cover
// window filling its slot).
func (c *Client) Leave(ctx context.Context) error {
	if c.cfg.Now {
		return c.Close()
	}
	w, err := drawPresence(c.rand)
	if err != nil {
		return err
	}
	c.mu.Lock()
	for {
		ready := !c.busy() && (!c.hadJob || c.fullEpochs >= c.lastJob+w)
		if ready {
			break
		}
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
	target := c.fullEpochs + 1
	inEpoch := c.epoch != nil
	c.mu.Unlock()
	for inEpoch {
		c.mu.Lock()
		done := c.fullEpochs >= target || c.epoch == nil
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
