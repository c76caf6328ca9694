// Package progress is a share or get job's progress as typed events
// (JobEvent), for the job's own user: to the sink its context carries
// (WithProgress), else as a line of text (JobEvent.Line). The local API
// (cmd/riffle/internal/webui, docs/webui.md) streams them to the command
// that handed the job over; a job paused after its allowance of epochs
// says so (docs/protocol.md §5.4 v3). Nothing in an event names a slot or
// a round's request. Pure: no I/O, no lock.
package progress

import (
	"context"
	"fmt"
	"time"
)

// Phases of a JobEvent. Started, Done and Failed are the local API's own:
// the job's id, and its end with a link, a path or an error.
const (
	PhaseWaiting  = "waiting"  // Waiting says for what (an epoch, the presence rule, the index)
	PhasePaused   = "paused"   // Paused says why, and what to run (§5.4 v3)
	PhaseMoving   = "moving"   // Done of Total chunks, Round, Rate, ETA
	PhaseResuming = "resuming" // a share: Done of Total chunks went out in an earlier run
	PhaseShared   = "shared"   // a share is published as Link: Bytes in Total uploads, Earlier of them before, Elapsed
	PhaseFetched  = "fetched"  // a get is complete: Name, Elapsed
	PhaseWarning  = "warning"  // Note
	PhaseStarted  = "started"
	PhaseDone     = "done"
	PhaseFailed   = "failed"
)

// JobEvent is one step of a share or get job. Nothing in it names a slot
// or a round's request: it is what the job's own user reads.
type JobEvent struct {
	Job     string        `json:"job,omitempty"` // the local API's job id
	Kind    string        `json:"kind"`          // "share" or "get"
	Phase   string        `json:"phase"`
	Name    string        `json:"name,omitempty"` // the file's name; a get's file id until its manifest came
	Done    int           `json:"done,omitempty"`
	Total   int           `json:"total,omitempty"`
	Round   int           `json:"round,omitempty"` // rounds this client took part in
	Rate    float64       `json:"rate_bytes_per_s,omitempty"`
	ETA     time.Duration `json:"eta_ns,omitempty"` // 0 with Done 0: not known
	Elapsed time.Duration `json:"elapsed_ns,omitempty"`
	Bytes   int64         `json:"bytes,omitempty"`
	Earlier int           `json:"earlier,omitempty"`
	// Unconfirmed: chunks of a finished share counted as published
	// without a signed list that shows them (docs/protocol.md §5.2 v3).
	Unconfirmed int    `json:"unconfirmed,omitempty"`
	Waiting     string `json:"waiting,omitempty"`
	Paused      string `json:"paused,omitempty"`
	Note        string `json:"note,omitempty"`
	Link        string `json:"link,omitempty"`
	Path        string `json:"path,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Line is the event as a line of text ("" for the API's own phases).
func (e JobEvent) Line() string {
	job := e.Kind + " " + e.Name
	switch e.Phase {
	case PhaseWaiting:
		if e.Elapsed > 0 {
			return fmt.Sprintf("%s: %s (%s)", job, e.Waiting, e.Elapsed.Round(time.Second))
		}
		return job + ": " + e.Waiting
	case PhasePaused:
		return job + ": " + e.Paused
	case PhaseMoving:
		eta := "?"
		if e.Done > 0 {
			eta = e.ETA.Round(time.Second).String()
		}
		return fmt.Sprintf("%s: %d/%d chunks, round %d, %.1f KiB/s, eta %s", job, e.Done, e.Total, e.Round, e.Rate/1024, eta)
	case PhaseResuming:
		return fmt.Sprintf("%s: resuming: %d of %d chunks went out in an earlier run; sending the other %d", job, e.Done, e.Total, e.Total-e.Done)
	case PhaseShared:
		earlier := ""
		if e.Earlier > 0 {
			earlier = fmt.Sprintf(", %d of them in an earlier run", e.Earlier)
		}
		line := fmt.Sprintf("shared %s: %d bytes in %d uploads (data and manifest chunks%s), %s", e.Name, e.Bytes, e.Total, earlier, e.Elapsed.Round(time.Millisecond))
		if e.Unconfirmed > 0 {
			line += fmt.Sprintf("; %d of them never seen published: the link may not fetch the whole file (warning below)", e.Unconfirmed)
		}
		return line
	case PhaseFetched:
		return fmt.Sprintf("fetched %s in %s", e.Name, e.Elapsed.Round(time.Millisecond))
	case PhaseWarning:
		return "warning: " + e.Note
	}
	return ""
}

// progressKey carries a job's own progress sink in its context.
type progressKey struct{}

// WithProgress returns ctx with the events of the share or get job run
// under it going to fn.
func WithProgress(ctx context.Context, fn func(JobEvent)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ProgressOf returns the sink of WithProgress in ctx, or nil.
func ProgressOf(ctx context.Context) func(JobEvent) {
	fn, _ := ctx.Value(progressKey{}).(func(JobEvent))
	return fn
}

// Moving is the event of a job of total chunks of b bytes, done of them
// after el.
func Moving(kind, name string, done, total, round, b int, el time.Duration) JobEvent {
	e := JobEvent{Kind: kind, Phase: PhaseMoving, Name: name, Done: done, Total: total, Round: round, Rate: float64(done*b) / el.Seconds()}
	if done > 0 {
		e.ETA = el / time.Duration(done) * time.Duration(total-done)
	}
	return e
}
