package client

import (
	"context"

	"github.com/riffle-net/riffle/node/client/internal/progress"
)

// A share or get job reports its progress as typed events
// (internal/progress): to the sink its context carries (WithProgress),
// else as text where the client's progress goes.

// JobEvent is one step of a share or get job.
type JobEvent = progress.JobEvent

// Phases of a JobEvent (progress's).
const (
	PhaseWaiting  = progress.PhaseWaiting
	PhasePaused   = progress.PhasePaused
	PhaseMoving   = progress.PhaseMoving
	PhaseResuming = progress.PhaseResuming
	PhaseShared   = progress.PhaseShared
	PhaseFetched  = progress.PhaseFetched
	PhaseWarning  = progress.PhaseWarning
	PhaseStarted  = progress.PhaseStarted
	PhaseDone     = progress.PhaseDone
	PhaseFailed   = progress.PhaseFailed
)

// WithProgress returns ctx with the events of the share or get job run
// under it going to fn.
func WithProgress(ctx context.Context, fn func(JobEvent)) context.Context {
	return progress.WithProgress(ctx, fn)
}

// ProgressOf returns the sink of WithProgress in ctx, or nil.
func ProgressOf(ctx context.Context) func(JobEvent) { return progress.ProgressOf(ctx) }

// jobEvent sends e to the job's own sink if ctx has one, else prints it
// where the client's progress goes.
func (c *Client) jobEvent(ctx context.Context, e JobEvent) {
	if fn := ProgressOf(ctx); fn != nil {
		fn(e)
		return
	}
	c.progress("%s", e.Line())
}
