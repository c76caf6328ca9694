package webui

import (
	"html/template"
	"mime"
	"net/http"
	"os"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// The job and network pages, and their API.

func (u *UI) jobView(w http.ResponseWriter, r *http.Request) (JobView, bool) {
	v, ok := u.jobs.get(r.PathValue("id"))
	if !ok {
		httpError(w, r, http.StatusNotFound, "no job %q", r.PathValue("id"))
	}
	return v, ok
}

func (u *UI) jobPage(w http.ResponseWriter, r *http.Request) {
	v, ok := u.jobView(w, r)
	if !ok {
		return
	}
	refresh := 0
	if v.State == stateRunning {
		refresh = 2
	}
	u.render(w, "job", page{Title: v.Kind + " " + v.Name, Nav: v.Kind, Refresh: refresh, Data: v})
}

// postResume lets a paused job go on for J more epochs (docs/protocol.md
// §5.4); the guard has checked the token, as for every POST.
func (u *UI) postResume(w http.ResponseWriter, r *http.Request) {
	v, code := u.jobs.resume(r.PathValue("id"), u.c)
	respondPaused(w, r, v, code)
}

// postCancel cancels a paused job instead of resuming it (§5.4); the
// guard has checked the token.
func (u *UI) postCancel(w http.ResponseWriter, r *http.Request) {
	v, code := u.jobs.stop(r.PathValue("id"))
	respondPaused(w, r, v, code)
}

// respondPaused answers an action on a paused job: the job, or why not.
func respondPaused(w http.ResponseWriter, r *http.Request, v JobView, code int) {
	switch code {
	case http.StatusNotFound:
		httpError(w, r, code, "no job %q", r.PathValue("id"))
	case http.StatusConflict:
		httpError(w, r, code, "job %s is not paused", v.ID)
	default:
		respondJob(w, r, v)
	}
}

func (u *UI) apiJob(w http.ResponseWriter, r *http.Request) {
	if v, ok := u.jobView(w, r); ok {
		writeJSON(w, http.StatusOK, v)
	}
}

func (u *UI) apiJobs(w http.ResponseWriter, r *http.Request) {
	l := u.jobs.list("")
	if l == nil {
		l = []JobView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": l})
}

// download serves a finished get's file as an attachment of a neutral
// type: the published media type is a stranger's choice and never used.
func (u *UI) download(w http.ResponseWriter, r *http.Request) {
	path, name, ok := u.jobs.path(r.PathValue("id"))
	if !ok {
		httpError(w, r, http.StatusNotFound, "no finished get %q", r.PathValue("id"))
		return
	}
	f, err := os.Open(path)
	if err != nil {
		httpError(w, r, http.StatusGone, "the fetched file is gone: %v", err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		httpError(w, r, http.StatusInternalServerError, "%v", err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": chunker.SanitizeName(name)}))
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// NetworkView is the network page's data.
type NetworkView struct {
	Status
	Round     int           `json:"round"` // within the epoch
	RoundTime time.Duration `json:"round_time_ns"`
	// Capacity is what the client could move a second at the last round
	// time: one chunk up and K chunks down a round.
	UpCapacity   string        `json:"up_capacity"`
	DownCapacity string        `json:"down_capacity"`
	Samples      []roundSample `json:"round_times"`
	Chart        template.HTML `json:"-"`
}

func (u *UI) network() NetworkView {
	st := u.c.Status()
	s, round := u.hist.snapshot(st.RoundsDone)
	v := NetworkView{Status: st, Round: round, RoundTime: lastRoundTime(s), Samples: s, Chart: chartSVG(s)}
	if v.Samples == nil {
		v.Samples = []roundSample{}
	}
	if v.RoundTime > 0 {
		up := float64(st.ChunkSize) / v.RoundTime.Seconds()
		v.UpCapacity, v.DownCapacity = humanBytes(uint64(up))+"/s", humanBytes(uint64(up*float64(st.K)))+"/s"
	}
	return v
}

func (u *UI) networkPage(w http.ResponseWriter, r *http.Request) {
	u.render(w, "network", page{Title: "Network", Nav: "network", Refresh: 3, Data: u.network()})
}

func (u *UI) apiStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, u.network())
}
