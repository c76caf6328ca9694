package webui

import (
	"fmt"
	"html/template"
	"io"
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
	// Text is what the page shows, formatted once here: its script
	// updates the page in place from it (data-text names a key).
	Text map[string]string `json:"text"`
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
	rt, capacity := "–", "–"
	if v.RoundTime > 0 {
		rt = fmtDur(v.RoundTime)
		capacity = v.UpCapacity + " up, " + v.DownCapacity + " down at the last round time"
	}
	waiting := ""
	if st.Waiting != "" {
		waiting = ": " + st.Waiting
	}
	v.Text = map[string]string{
		"epoch":      fmt.Sprintf("#%d %s", st.Number, st.Epoch),
		"anonymity":  fmt.Sprintf("%d clients", st.AnonymitySet),
		"round":      fmt.Sprintf("%d of %d", round, st.Rounds),
		"round_time": rt,
		"goodput":    rateOf(st.Goodput),
		"throughput": rateOf(st.Throughput),
		"capacity":   capacity,
		"params":     fmt.Sprintf("b = %s, k = %d", humanBytes(uint64(max(st.ChunkSize, 0))), st.K),
		"waiting":    waiting,
		"group_cost": perHour(st.GroupSendPerHour, st.GroupRecvPerHour),
		"traffic":    perHour(st.SentPerHour, st.RecvPerHour),
		"totals":     fmt.Sprintf("%d epochs, %d rounds, %d chunks uploaded, %d fetched by this client.", st.Epochs, st.RoundsDone, st.Uploaded, st.Fetched),
	}
	return v
}

// networkChart is the network page's chart alone, which its script
// reloads as an image.
func (u *UI) networkChart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/svg+xml")
	io.WriteString(w, string(u.network().Chart))
}

func (u *UI) networkPage(w http.ResponseWriter, r *http.Request) {
	// No reload: ui.js updates the page in place from /api/status.
	u.render(w, "network", page{Title: "Network", Nav: "network", Data: u.network()})
}

func (u *UI) apiStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, u.network())
}
