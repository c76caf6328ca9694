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
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/riffle-net/riffle/chunker"
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
}

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
	u := &UI{ctx: ctx, c: c, opts: opts, guard: newGuard(opts.Addr, opts.Token, opts.Public), tmpl: tm, mux: http.NewServeMux()}
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
	m.HandleFunc("GET /api/status", u.apiStatus)
	m.HandleFunc("GET /api/index", u.apiIndex)
	m.HandleFunc("GET /api/files/{id}", u.apiFile)
	m.HandleFunc("GET /api/jobs", u.apiJobs)
	m.HandleFunc("GET /api/jobs/{id}", u.apiJob)
	m.HandleFunc("POST /api/get", u.postGet)
	m.HandleFunc("POST /api/share", u.postShare)
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
	funcs := template.FuncMap{"bytes": bytesOf, "rate": rateOf, "when": when, "dur": fmtDur}
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
// plain text elsewhere (never HTML: the reason may quote the request).
func httpError(w http.ResponseWriter, r *http.Request, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "%d %s: %s\n", code, http.StatusText(code), msg)
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

// FileView is an index entry as pages and the API show it.
type FileView struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Size      uint64    `json:"size"`
	Chunks    int       `json:"chunks"`
	Round     uint32    `json:"round"`
	Published time.Time `json:"published"`
	Link      string    `json:"link"`
}

func fileView(f File) FileView {
	return FileView{ID: f.ID.String(), Name: display(f.Name), Size: f.Size, Chunks: f.Chunks, Round: f.Round, Published: f.Published, Link: f.Link()}
}

// IndexQuery is a search of the index.
type IndexQuery struct {
	Q     string `json:"q"`
	Sort  string `json:"sort"`  // name, size, chunks or published
	Order string `json:"order"` // asc or desc
}

// maxQuery bounds a search string.
const maxQuery = 256

func (u *UI) search(r *http.Request) (IndexQuery, []FileView, error) {
	q := IndexQuery{Q: r.URL.Query().Get("q"), Sort: r.URL.Query().Get("sort"), Order: r.URL.Query().Get("order")}
	if len(q.Q) > maxQuery {
		return q, nil, fmt.Errorf("search text of %d bytes, at most %d", len(q.Q), maxQuery)
	}
	if q.Sort == "" {
		q.Sort = "published"
	}
	if q.Order == "" {
		q.Order = "desc"
		if q.Sort == "name" {
			q.Order = "asc"
		}
	}
	if !slices.Contains([]string{"name", "size", "chunks", "published"}, q.Sort) {
		return q, nil, fmt.Errorf("unknown sort %q (name, size, chunks, published)", q.Sort)
	}
	if q.Order != "asc" && q.Order != "desc" {
		return q, nil, fmt.Errorf("unknown order %q (asc, desc)", q.Order)
	}
	needle := strings.ToLower(q.Q)
	var out []FileView
	for _, f := range u.c.Index() {
		v := fileView(f)
		if needle != "" && !strings.Contains(strings.ToLower(v.Name), needle) && !strings.Contains(v.ID, needle) {
			continue
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b FileView) int {
		var c int
		switch q.Sort {
		case "name":
			c = strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
		case "size":
			c = cmpU(a.Size, b.Size)
		case "chunks":
			c = cmpU(uint64(a.Chunks), uint64(b.Chunks))
		default:
			c = a.Published.Compare(b.Published)
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if q.Order == "desc" {
			c = -c
		}
		return c
	})
	return q, out, nil
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (u *UI) indexPage(w http.ResponseWriter, r *http.Request) {
	q, files, err := u.search(r)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	u.render(w, "index", page{Title: "Index", Nav: "index", Data: struct {
		Query IndexQuery
		Files []FileView
		Total int
	}{q, files, len(u.c.Index())}})
}

func (u *UI) apiIndex(w http.ResponseWriter, r *http.Request) {
	q, files, err := u.search(r)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	if files == nil {
		files = []FileView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": q, "files": files})
}

// ChunkView is one chunk of a file and whether this client holds it.
type ChunkView struct {
	ID   string `json:"id"`
	Role string `json:"role"` // "manifest" or "data"
	Held bool   `json:"held"`
}

// FileDetail is a file's page: the entry and the chunks this client knows.
type FileDetail struct {
	File FileView `json:"file"`
	// Chunks lists the root manifest and, when this client shared or
	// fetched the file from this UI, its chunks; otherwise the list is in
	// the manifest, which only a get fetches.
	Chunks  []ChunkView `json:"chunks"`
	Listed  bool        `json:"all_chunks_listed"`
	Fetched bool        `json:"fetched_here"`
}

func (u *UI) fileDetail(r *http.Request) (FileDetail, int, error) {
	id, err := chunker.ParseID(r.PathValue("id"))
	if err != nil {
		return FileDetail{}, http.StatusBadRequest, fmt.Errorf("bad file id: %w", err)
	}
	for _, f := range u.c.Index() {
		if f.ID != id {
			continue
		}
		d := FileDetail{File: fileView(f), Fetched: u.jobs.fetched(id)}
		ids := u.jobs.chunksOf(id)
		d.Listed = len(ids) > 0
		if !slices.Contains(ids, id) {
			ids = append([]chunker.ID{id}, ids...)
		}
		held := u.c.Holds(ids)
		for i, c := range ids {
			role := "data"
			if c == id {
				role = "manifest"
			}
			d.Chunks = append(d.Chunks, ChunkView{ID: c.String(), Role: role, Held: held[i]})
		}
		return d, http.StatusOK, nil
	}
	return FileDetail{}, http.StatusNotFound, fmt.Errorf("file %s is not in the synced index", id)
}

func (u *UI) filePage(w http.ResponseWriter, r *http.Request) {
	d, code, err := u.fileDetail(r)
	if err != nil {
		httpError(w, r, code, "%v", err)
		return
	}
	u.render(w, "file", page{Title: d.File.Name, Nav: "index", Data: d})
}

func (u *UI) apiFile(w http.ResponseWriter, r *http.Request) {
	d, code, err := u.fileDetail(r)
	if err != nil {
		httpError(w, r, code, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (u *UI) getPage(w http.ResponseWriter, r *http.Request) {
	u.render(w, "get", page{Title: "Get", Nav: "get", Data: struct {
		Link string
		Jobs []JobView
		Dir  string
	}{r.URL.Query().Get("link"), u.jobs.list("get"), u.opts.DownloadDir}})
}

func (u *UI) sharePage(w http.ResponseWriter, r *http.Request) {
	u.render(w, "share", page{Title: "Share", Nav: "share", Data: struct {
		Jobs      []JobView
		MaxUpload string
	}{u.jobs.list("share"), humanBytes(uint64(u.opts.MaxUpload))}})
}

// respondJob answers a started job: JSON under /api/, else a redirect to
// its page.
func respondJob(w http.ResponseWriter, r *http.Request, v JobView) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, http.StatusAccepted, v)
		return
	}
	http.Redirect(w, r, "/jobs/"+v.ID, http.StatusSeeOther)
}

func (u *UI) postGet(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		httpError(w, r, http.StatusBadRequest, "bad form: %v", err)
		return
	}
	s := strings.TrimSpace(r.PostForm.Get("link"))
	if s == "" {
		httpError(w, r, http.StatusBadRequest, "no link given")
		return
	}
	link, err := chunker.ParseLink(s)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	// One get per file: the client follows a file by its id.
	if v, ok := u.jobs.runningGet(link.ID); ok {
		respondJob(w, r, v)
		return
	}
	if err := os.MkdirAll(u.opts.DownloadDir, 0o700); err != nil {
		httpError(w, r, http.StatusInternalServerError, "download directory: %v", err)
		return
	}
	ctx, cancel := context.WithCancel(u.ctx)
	j := &job{ID: newJobID(), Kind: "get", Name: link.ID.String(), Link: link.String(), Private: link.Key != nil,
		State: stateRunning, Started: u.opts.Now(), fileID: link.ID}
	for _, f := range u.c.Index() {
		if f.ID == link.ID {
			j.Name = display(f.Name)
		}
	}
	u.jobs.add(j)
	go func() {
		defer cancel()
		path, err := u.c.Get(ctx, link, u.opts.DownloadDir, func(p Progress) {
			u.jobs.update(j.ID, func(j *job) {
				j.Done, j.Total = p.Done, p.Total
				if p.Name != "" {
					j.Name = display(p.Name)
				}
				if p.IDs != nil {
					j.ids = p.IDs
				}
			})
		})
		u.jobs.update(j.ID, func(j *job) {
			j.Finished = u.opts.Now()
			if err != nil {
				j.State, j.Err = stateFailed, err.Error()
				return
			}
			j.State, j.Path, j.Done = stateDone, path, j.Total
			j.Name = display(filepath.Base(path))
		})
	}()
	v, _ := u.jobs.get(j.ID)
	respondJob(w, r, v)
}

// maxField bounds a text field of the share form.
const maxField = 4096

func (u *UI) postShare(w http.ResponseWriter, r *http.Request) {
	tokenOK := checked(r)
	var (
		private bool
		path    string
	)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			httpError(w, r, http.StatusBadRequest, "bad form: %v", err)
			return
		}
		u.sharePath(w, r, r.PostForm.Get("path"), formBool(r.PostForm.Get("private")))
		return
	}
	// An upload is streamed into the client's chunker, never buffered
	// whole here; the token must come before the file (the form puts its
	// hidden field first).
	r.Body = http.MaxBytesReader(w, r.Body, u.opts.MaxUpload+maxForm)
	mr, err := r.MultipartReader()
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "bad upload: %v", err)
		return
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			httpError(w, r, uploadStatus(err), "bad upload: %v", err)
			return
		}
		name := part.FormName()
		if name == "file" {
			if !tokenOK {
				httpError(w, r, http.StatusForbidden, "missing or wrong CSRF token")
				return
			}
			if part.FileName() == "" {
				// An empty file input: fall through to the path, if any.
				continue
			}
			u.shareStream(w, r, &capReader{r: part, left: u.opts.MaxUpload, max: u.opts.MaxUpload}, part.FileName(), private)
			return
		}
		v, err := io.ReadAll(io.LimitReader(part, maxField+1))
		if err != nil {
			httpError(w, r, uploadStatus(err), "bad upload: %v", err)
			return
		}
		if len(v) > maxField {
			httpError(w, r, http.StatusRequestEntityTooLarge, "form field %q too long", name)
			return
		}
		switch name {
		case "csrf":
			tokenOK = tokenOK || u.guard.tokenOK(string(v))
		case "private":
			private = formBool(string(v))
		case "path":
			path = string(v)
		}
	}
	if !tokenOK {
		httpError(w, r, http.StatusForbidden, "missing or wrong CSRF token")
		return
	}
	u.sharePath(w, r, path, private)
}

func formBool(s string) bool { return s == "on" || s == "1" || s == "true" }

func uploadStatus(err error) int {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, errTooBig) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// errTooBig is returned by a capReader past its bound.
var errTooBig = errors.New("upload too large")

// capReader fails once more than max bytes were read: the client's
// chunker then refuses the whole file and queues nothing.
type capReader struct {
	r         io.Reader
	left, max int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", errTooBig, c.max)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", errTooBig, c.max)
	}
	return n, err
}

// sharePath shares a file of this machine by its absolute path (as `riffle
// share` hands it to a running client).
func (u *UI) sharePath(w http.ResponseWriter, r *http.Request, path string, private bool) {
	if path == "" {
		httpError(w, r, http.StatusBadRequest, "choose a file or give a path")
		return
	}
	if !filepath.IsAbs(path) {
		httpError(w, r, http.StatusBadRequest, "path %q is not absolute", path)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "open: %v", err)
		return
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		httpError(w, r, http.StatusBadRequest, "%s is not a regular file", path)
		return
	}
	u.shareStream(w, r, f, filepath.Base(path), private)
	f.Close()
}

// shareStream starts a share of rd and answers once the client has read
// and queued it (or refused it: then no job is left behind).
func (u *UI) shareStream(w http.ResponseWriter, r *http.Request, rd io.Reader, name string, private bool) {
	ctx, cancel := context.WithCancel(u.ctx)
	j := &job{ID: newJobID(), Kind: "share", Name: display(filepath.Base(name)), Private: private, State: stateRunning, Started: u.opts.Now()}
	u.jobs.add(j)
	queued := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		defer cancel()
		first := true
		link, err := u.c.Share(ctx, rd, name, private, func(p Progress) {
			u.jobs.update(j.ID, func(j *job) {
				j.Done, j.Total = p.Done, p.Total
				if p.Link.ID != (chunker.ID{}) {
					j.Link, j.fileID = p.Link.String(), p.Link.ID
				}
				if p.IDs != nil {
					j.ids = p.IDs
				}
			})
			if first {
				first = false
				close(queued)
			}
		})
		u.jobs.update(j.ID, func(j *job) {
			j.Finished = u.opts.Now()
			if err != nil {
				j.State, j.Err = stateFailed, err.Error()
				return
			}
			j.State, j.Link, j.fileID, j.Done = stateDone, link.String(), link.ID, j.Total
		})
		ended <- err
	}()
	select {
	case <-queued:
	case err := <-ended:
		if err != nil {
			u.jobs.remove(j.ID)
			httpError(w, r, uploadStatus(err), "share: %v", err)
			return
		}
	case <-r.Context().Done():
		cancel()
		u.jobs.remove(j.ID)
		return
	}
	v, _ := u.jobs.get(j.ID)
	respondJob(w, r, v)
}

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

// humanBytes prints a byte count with a binary unit.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + " B"
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// bytesOf is humanBytes for the integer types templates hold.
func bytesOf(v any) string {
	switch n := v.(type) {
	case uint64:
		return humanBytes(n)
	case int:
		return humanBytes(uint64(max(n, 0)))
	case int64:
		return humanBytes(uint64(max(n, 0)))
	}
	return fmt.Sprint(v)
}

// rateOf prints bytes a second.
func rateOf(r float64) string { return humanBytes(uint64(max(r, 0))) + "/s" }

// when prints a time for a table.
func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}
