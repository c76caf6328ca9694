package webui

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// Job states.
const (
	stateRunning = "running"
	stateDone    = "done"
	stateFailed  = "failed"
)

// maxJobs bounds the jobs a UI remembers: the oldest finished ones go.
const maxJobs = 256

// job is a share or get run through the client, kept in memory so that its
// page survives a reload.
type job struct {
	ID       string
	Kind     string // "share" or "get"
	Name     string
	Link     string
	Private  bool
	State    string
	Err      string
	Path     string // a finished get's file
	Paused   string // why a running job paused, waiting for its user
	Waiting  string // what a running job waits for, if it waits
	Done     int
	Total    int
	Started  time.Time
	Finished time.Time
	ids      []chunker.ID
	fileID   chunker.ID
	resumeID chunker.ID // the id the client follows the job by (Resume)
	cancel   func()     // ends the job's context: the client withdraws it
	// size is the file's bytes, when known: rates are in bytes, which
	// users expect, not chunks.
	size uint64
	// firstAt and firstDone are the first progress seen: the rate counts
	// from there, so chunks held before (a resumed get) or queued at once
	// do not show as a burst of thousands a second.
	firstAt   time.Time
	firstDone int
	// outside: fetched into a directory of the local user's choice
	// (the local API's dir), not offered for download.
	outside bool
}

// observe records a progress report of done chunks at now.
func (j *job) observe(now time.Time, done, total int) {
	if j.firstAt.IsZero() {
		j.firstAt, j.firstDone = now, done
	}
	j.Done, j.Total = done, total
}

// minRateSpan is how long a job runs before a rate is shown: over less,
// one chunk more makes a wild figure.
const minRateSpan = time.Second

// JobView is a job as the pages and the API show it.
type JobView struct {
	ID      string  `json:"id"`
	Kind    string  `json:"kind"`
	Name    string  `json:"name"`
	Link    string  `json:"link,omitempty"`
	Private bool    `json:"private"`
	State   string  `json:"state"`
	Error   string  `json:"error,omitempty"`
	Path    string  `json:"path,omitempty"`
	Paused  string  `json:"paused,omitempty"`  // why a running job waits for its user
	Waiting string  `json:"waiting,omitempty"` // what a running job waits for (an epoch, presence), and about how long
	Done    int     `json:"done"`
	Total   int     `json:"total"`
	Percent int     `json:"percent"`
	Rate    float64 `json:"rate_chunks_per_s"`
	// Size is the file's bytes (0: not known yet), BytesDone about how
	// many of them are done (Size in proportion to the chunks), ByteRate
	// their rate since the first progress.
	Size      uint64    `json:"size,omitempty"`
	BytesDone uint64    `json:"bytes_done,omitempty"`
	ByteRate  float64   `json:"rate_bytes_per_s"`
	ETA       string    `json:"eta,omitempty"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished,omitzero"`
	Elapsed   string    `json:"elapsed"`
}

type jobs struct {
	mu  sync.Mutex
	m   map[string]*job
	now func() time.Time
}

func newJobID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (js *jobs) add(j *job) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.m == nil {
		js.m = map[string]*job{}
	}
	if len(js.m) >= maxJobs {
		var oldest *job
		for _, o := range js.m {
			if o.State != stateRunning && (oldest == nil || o.Started.Before(oldest.Started)) {
				oldest = o
			}
		}
		if oldest != nil {
			delete(js.m, oldest.ID)
		}
	}
	js.m[j.ID] = j
}

func (js *jobs) remove(id string) {
	js.mu.Lock()
	defer js.mu.Unlock()
	delete(js.m, id)
}

// resume resumes the paused running job id through c and says why not if
// it cannot: no such job (404), or it is not paused (409).
func (js *jobs) resume(id string, c Client) (JobView, int) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j := js.m[id]
	if j == nil {
		return JobView{}, http.StatusNotFound
	}
	fid := j.resumeID
	if fid == (chunker.ID{}) {
		fid = j.fileID
	}
	if j.State != stateRunning || j.Paused == "" || c.Resume(fid) == 0 {
		return js.view(j), http.StatusConflict
	}
	j.Paused = ""
	return js.view(j), http.StatusOK
}

// stop cancels the paused running job id: the client withdraws it, and
// the job ends as failed with what became of the file. 404: no such job;
// 409: it is not paused.
func (js *jobs) stop(id string) (JobView, int) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j := js.m[id]
	if j == nil {
		return JobView{}, http.StatusNotFound
	}
	if j.State != stateRunning || j.Paused == "" || j.cancel == nil {
		return js.view(j), http.StatusConflict
	}
	j.cancel()
	return js.view(j), http.StatusOK
}

// update runs fn on job id under the lock.
func (js *jobs) update(id string, fn func(j *job)) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if j := js.m[id]; j != nil {
		fn(j)
	}
}

func (js *jobs) get(id string) (JobView, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j := js.m[id]
	if j == nil {
		return JobView{}, false
	}
	return js.view(j), true
}

// path returns a finished get's file path.
func (js *jobs) path(id string) (string, string, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j := js.m[id]
	if j == nil || j.Kind != "get" || j.State != stateDone || j.outside {
		return "", "", false
	}
	return j.Path, j.Name, true
}

// list returns the jobs of kind ("" for all), newest first.
func (js *jobs) list(kind string) []JobView {
	js.mu.Lock()
	defer js.mu.Unlock()
	var out []JobView
	for _, j := range js.m {
		if kind == "" || j.Kind == kind {
			out = append(out, js.view(j))
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Started.Equal(out[b].Started) {
			return out[a].Started.After(out[b].Started)
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// chunksOf returns the chunk ids a share or get job of this UI knew for
// file id.
func (js *jobs) chunksOf(id chunker.ID) []chunker.ID {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.m {
		if j.fileID == id && len(j.ids) > 0 {
			return append([]chunker.ID(nil), j.ids...)
		}
	}
	return nil
}

// runningGet returns the running get of file id, if any.
func (js *jobs) runningGet(id chunker.ID) (JobView, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.m {
		if j.fileID == id && j.Kind == "get" && j.State == stateRunning {
			return js.view(j), true
		}
	}
	return JobView{}, false
}

// fetched reports whether a get of file id finished here.
func (js *jobs) fetched(id chunker.ID) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.m {
		if j.fileID == id && j.Kind == "get" && j.State == stateDone {
			return true
		}
	}
	return false
}

func (js *jobs) view(j *job) JobView {
	now := js.now()
	end := now
	if !j.Finished.IsZero() {
		end = j.Finished
	}
	el := end.Sub(j.Started)
	v := JobView{ID: j.ID, Kind: j.Kind, Name: j.Name, Link: j.Link, Private: j.Private, State: j.State, Error: j.Err,
		Path: j.Path, Paused: j.Paused, Waiting: j.Waiting, Done: j.Done, Total: j.Total, Started: j.Started, Finished: j.Finished, Elapsed: el.Round(time.Second).String()}
	if j.Total > 0 {
		v.Percent = 100 * j.Done / j.Total
		v.Size = j.size
		v.BytesDone = uint64(float64(j.size) * float64(j.Done) / float64(j.Total))
	}
	span := end.Sub(j.firstAt)
	if !j.firstAt.IsZero() && span >= minRateSpan && j.Done > j.firstDone {
		v.Rate = float64(j.Done-j.firstDone) / span.Seconds()
		if j.Total > 0 {
			v.ByteRate = v.Rate * float64(j.size) / float64(j.Total)
		}
		if j.State == stateRunning && j.Total > j.Done {
			v.ETA = (time.Duration(float64(j.Total-j.Done) / v.Rate * float64(time.Second))).Round(time.Second).String()
		}
	}
	return v
}
