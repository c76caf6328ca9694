package webui

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
)

//go:embed templates/*.html static/*
var assets embed.FS

// UI is the web UI of one running client.
type UI struct {
	ctx   context.Context
	c     Client
	opts  Options
	guard *guard
	jobs  jobs
	hist  history
	tmpl  map[string]*template.Template
	mux   *http.ServeMux
	h     http.Handler
	// shareDirs and dataDir are Options' resolved (EvalSymlinks).
	shareDirs []string
	dataDir   string

	// running counts the share and get goroutines started from the UI, so
	// that Wait can hold a shutdown until they have ended (with ctx).
	running sync.WaitGroup
}

// Wait returns once every share and get started from the UI has ended.
// Jobs end when the context given to New is cancelled; a caller cancels
// it first, then waits, so that no job writes after the client closes.
func (u *UI) Wait() { u.running.Wait() }

// New returns the UI of c. Jobs started from it end with ctx; Run samples
// the client's rounds for the network page.
func New(ctx context.Context, c Client, opts Options) (*UI, error) {
	if opts.Token == "" {
		opts.Token = NewToken()
	}
	if opts.MaxUpload <= 0 {
		opts.MaxUpload = DefaultMaxUpload
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DownloadDir == "" {
		return nil, errors.New("webui: no download directory")
	}
	tm, err := parseTemplates("index", "file", "get", "share", "job", "network")
	if err != nil {
		return nil, err
	}
	shareDirs, err := resolveDirs(opts.ShareDirs)
	if err != nil {
		return nil, err
	}
	u := &UI{ctx: ctx, c: c, opts: opts, guard: newGuard(opts.Addr, opts.Token, opts.Public), tmpl: tm, mux: http.NewServeMux(), shareDirs: shareDirs}
	if opts.DataDir != "" {
		// A data directory not made yet holds nothing to refuse; its
		// cleaned path still is.
		u.dataDir = filepath.Clean(opts.DataDir)
		if real, err := filepath.EvalSymlinks(opts.DataDir); err == nil {
			u.dataDir = real
		}
		if abs, err := filepath.Abs(u.dataDir); err == nil {
			u.dataDir = abs
		}
	}
	u.jobs.now = opts.Now
	m := u.mux
	m.HandleFunc("GET /{$}", u.indexPage)
	m.HandleFunc("GET /file/{id}", u.filePage)
	m.HandleFunc("GET /get", u.getPage)
	m.HandleFunc("POST /get", u.postGet)
	m.HandleFunc("GET /share", u.sharePage)
	m.HandleFunc("POST /share", u.postShare)
	m.HandleFunc("GET /jobs/{id}", u.jobPage)
	m.HandleFunc("GET /jobs/{id}/file", u.download)
	m.HandleFunc("GET /network", u.networkPage)
	m.HandleFunc("GET /network/chart.svg", u.networkChart)
	m.HandleFunc("GET /api/status", u.apiStatus)
	m.HandleFunc("GET /api/index", u.apiIndex)
	m.HandleFunc("GET /api/files/{id}", u.apiFile)
	m.HandleFunc("GET /api/jobs", u.apiJobs)
	m.HandleFunc("GET /api/jobs/{id}", u.apiJob)
	m.HandleFunc("POST /api/get", u.postGet)
	m.HandleFunc("POST /api/share", u.postShare)
	m.HandleFunc("POST /jobs/{id}/resume", u.postResume)
	m.HandleFunc("POST /api/jobs/{id}/resume", u.postResume)
	m.HandleFunc("POST /jobs/{id}/cancel", u.postCancel)
	m.HandleFunc("POST /api/jobs/{id}/cancel", u.postCancel)
	m.HandleFunc("GET /api/client", u.apiClient)
	m.HandleFunc("POST /api/resume", u.postResumeFile)
	handleStatic(m)
	m.HandleFunc("/", notFound(m))
	u.h = u.guard.wrap(m, false)
	return u, nil
}

// Token returns the per-run token.
func (u *UI) Token() string { return u.opts.Token }

// ServeHTTP serves the UI.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) { u.h.ServeHTTP(w, r) }

// Run samples the client's round counter until ctx ends (the network
// page's round times and chart).
func (u *UI) Run(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		st := u.c.Status()
		u.hist.observe(u.opts.Now(), st.RoundsDone, st.Epoch)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func parseTemplates(pages ...string) (map[string]*template.Template, error) {
	funcs := template.FuncMap{"bytes": bytesOf, "rate": rateOf, "when": when, "dur": fmtDur,
		"chartW": func() int { return chartW }, "chartH": func() int { return chartH }}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/jobs.html")
	if err != nil {
		return nil, fmt.Errorf("webui: templates: %w", err)
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		t, err := template.Must(base.Clone()).ParseFS(assets, "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("webui: template %s: %w", p, err)
		}
		out[p] = t
	}
	return out, nil
}

// handleStatic serves the embedded style sheet and script, one file per
// name (no directory listing).
func handleStatic(m *http.ServeMux) {
	sub, _ := fs.Sub(assets, "static")
	m.HandleFunc("GET /static/{file}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if st, err := fs.Stat(sub, name); err != nil || st.IsDir() {
			httpError(w, r, http.StatusNotFound, "no such file")
			return
		}
		http.ServeFileFS(w, r, sub, name)
	})
}

// notFound answers a request no route takes: 405 if the path takes a POST
// (a state change asked for by GET), else 404.
func notFound(m *http.ServeMux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			r2 := r.Clone(r.Context())
			r2.Method = http.MethodPost
			if _, p := m.Handler(r2); p != "/" && p != "" {
				w.Header().Set("Allow", "POST")
				httpError(w, r, http.StatusMethodNotAllowed, "%s changes state: use POST", r.URL.Path)
				return
			}
		}
		httpError(w, r, http.StatusNotFound, "no such page: %s %s", r.Method, r.URL.Path)
	}
}

// page is what every page template gets.
type page struct {
	Title   string
	Nav     string
	Token   string
	Refresh int // seconds; 0: no automatic reload
	Data    any
}

func (u *UI) render(w http.ResponseWriter, name string, p page) {
	p.Token = u.opts.Token
	renderTemplate(w, u.tmpl[name], p)
}

func renderTemplate(w http.ResponseWriter, t *template.Template, p any) {
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout.html", p); err != nil {
		http.Error(w, "template: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, b.String())
}

// httpError answers with a status and a one-line reason: JSON under /api/,
// else an HTML page (the reason escaped: it may quote the request) with a
// way back to where the user was.
func httpError(w http.ResponseWriter, r *http.Request, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	t, err := errorTemplate()
	if err != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		fmt.Fprintf(w, "%d %s: %s\n", code, http.StatusText(code), msg)
		return
	}
	back, text := backOf(r)
	var b strings.Builder
	t.ExecuteTemplate(&b, "layout.html", page{Title: http.StatusText(code), Nav: "error",
		Data: errorView{Code: code, Status: http.StatusText(code), Msg: msg, Back: back, BackText: text}})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, b.String())
}

// errorView is the error page's data.
type errorView struct {
	Code           int
	Status, Msg    string
	Back, BackText string
}

// errorTemplate is parsed once: httpError also serves the guard and the
// server view, which have no UI of their own to hold it.
var errorTemplate = sync.OnceValues(func() (*template.Template, error) {
	m, err := parseTemplates("error")
	return m["error"], err
})

// backOf is where an error page leads back to: the form the request came
// from, a link given to Get kept for its correction.
func backOf(r *http.Request) (href, text string) {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && p == "/get":
		link := ""
		if r.PostForm != nil {
			link = r.PostForm.Get("link")
		}
		if len(link) > 512 {
			link = ""
		}
		if link == "" {
			return "/get", "Back to Get"
		}
		return "/get?link=" + url.QueryEscape(link), "Back to Get, to correct the link"
	case r.Method == http.MethodPost && p == "/share":
		return "/share", "Back to Share"
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/jobs/") && r.PathValue("id") != "":
		return "/jobs/" + url.PathEscape(r.PathValue("id")), "Back to the job"
	}
	return "/", "Go to the index"
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// display makes a published string printable: valid UTF-8, no control or
// format characters (a right-to-left override could disguise a name).
// Escaping for HTML is html/template's job.
func display(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return '\uFFFD'
		}
		return r
	}, s)
}
