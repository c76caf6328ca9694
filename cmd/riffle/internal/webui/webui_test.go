package webui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/client"
)

const (
	testAddr  = "127.0.0.1:7777"
	testToken = "t0k3n"
	// hostile is a published name chosen to break out of HTML.
	hostile = `"><script>alert(1)</script><img src=x onerror=alert(2)>.txt`
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeClient is a client with a fixed index whose jobs finish at once.
type fakeClient struct {
	mu     sync.Mutex
	files  []File
	held   map[chunker.ID]bool
	shares []string // names shared
	gets   []string // links fetched
	// block, if set, holds gets until closed.
	block chan struct{}
	// pause, if set, is the pause reason of every get; resumed records
	// Resume's calls.
	pause   string
	resumed []chunker.ID
	// waiting, if set, is what every get waits for before its first
	// figures.
	waiting string
	// epochs moves the epoch number on (the network page's live test).
	epochs atomic.Uint64
}

func fileID(s string) chunker.ID { return chunker.ID(sha256.Sum256([]byte(s))) }

func newFake() *fakeClient {
	return &fakeClient{
		files: []File{
			{ID: fileID("a"), Name: "alpha.bin", Size: 3 << 20, Chunks: 12, Round: 4, Published: t0},
			{ID: fileID("b"), Name: hostile, Size: 10, Chunks: 1, Round: 9, Published: t0.Add(time.Hour)},
			{ID: fileID("c"), Name: "Charlie\u202egnp.exe", Size: 700 << 10, Chunks: 3, Round: 2, Published: t0.Add(-time.Hour)},
		},
		held: map[chunker.ID]bool{fileID("a"): true},
	}
}

func (f *fakeClient) Status() Status {
	return Status{InEpoch: true, Epoch: "0a0b0c0d", Number: 7 + f.epochs.Load(), AnonymitySet: 16, ChunkSize: 64 << 10, K: 1, Rounds: 64, RoundsDone: 40,
		Chain: []ChainServer{{Nick: "<b>nick</b>", PeerID: "12D3KooWA", Primary: true}, {Nick: "two", PeerID: "12D3KooWB", Pinned: true}},
		Pins:  []Pin{{PeerID: "12D3KooWB", InChain: true}}}
}

func (f *fakeClient) Index() []File { return append([]File(nil), f.files...) }

func (f *fakeClient) Holds(ids []chunker.ID) []bool {
	out := make([]bool, len(ids))
	for i, id := range ids {
		out[i] = f.held[id]
	}
	return out
}

func (f *fakeClient) Share(ctx context.Context, r io.Reader, name string, private bool, progress func(Progress)) (chunker.Link, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return chunker.Link{}, err
	}
	link := chunker.Link{ID: chunker.ID(sha256.Sum256(data))}
	if private {
		link.Key = new(chunker.FileKey)
	}
	f.mu.Lock()
	f.shares = append(f.shares, name)
	f.mu.Unlock()
	progress(Progress{Total: 2, Link: link, IDs: []chunker.ID{fileID("d1"), link.ID}})
	progress(Progress{Done: 2, Total: 2, Link: link})
	emit(ctx, client.JobEvent{Phase: client.PhaseShared, Name: name, Total: 2, Bytes: int64(len(data))})
	return link, nil
}

func (f *fakeClient) Get(ctx context.Context, link chunker.Link, dir string, progress func(Progress)) (string, error) {
	f.mu.Lock()
	f.gets = append(f.gets, link.String())
	block := f.block
	waiting := f.waiting
	f.mu.Unlock()
	if waiting != "" {
		progress(Progress{Link: link, Waiting: waiting, File: link.ID})
		emit(ctx, client.JobEvent{Phase: client.PhaseWaiting, Name: link.ID.String(), Waiting: waiting})
		if block != nil {
			select {
			case <-block:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		block = nil
	}
	progress(Progress{Done: 1, Total: 4, Name: "got.bin", IDs: []chunker.ID{link.ID, fileID("g1"), fileID("g2")}, Paused: f.pause, File: link.ID})
	emit(ctx, client.JobEvent{Phase: client.PhaseMoving, Name: "got.bin", Done: 1, Total: 4})
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	p := filepath.Join(dir, "got.bin")
	return p, os.WriteFile(p, []byte("fetched bytes"), 0o600)
}

// emit sends a job's event where the client sends them: to its
// context's sink.
func emit(ctx context.Context, e client.JobEvent) {
	if fn := client.ProgressOf(ctx); fn != nil {
		fn(e)
	}
}

func (f *fakeClient) Resume(id chunker.ID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resumed = append(f.resumed, id)
	return 1
}

func (f *fakeClient) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.shares), len(f.gets)
}

func newTestUI(t *testing.T, f *fakeClient, mod func(*Options)) *UI {
	t.Helper()
	o := Options{Addr: testAddr, Token: testToken, DownloadDir: t.TempDir(), MaxUpload: 4096, Now: func() time.Time { return t0 }}
	if mod != nil {
		mod(&o)
	}
	u, err := New(t.Context(), f, o)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after t.TempDir: runs before the directory is removed,
	// once t.Context is cancelled, so no job writes into it afterwards.
	t.Cleanup(u.Wait)
	return u
}

// do sends a request with the UI's own Host unless the request set one.
func do(t *testing.T, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	if r.Host == "example.com" || r.Host == "" {
		r.Host = testAddr
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("%s %s: no strict CSP: %q", r.Method, r.URL, csp)
	}
	if w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s %s: no nosniff", r.Method, r.URL)
	}
	return w
}

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	return do(t, h, httptest.NewRequest("GET", path, nil))
}

func postForm(t *testing.T, h http.Handler, path string, v url.Values) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", path, strings.NewReader(v.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(t, h, r)
}

func wantCode(t *testing.T, w *httptest.ResponseRecorder, code int, what string) {
	t.Helper()
	if w.Code != code {
		t.Fatalf("%s: status %d, want %d; body %q", what, w.Code, code, w.Body.String())
	}
}

// waitJob polls the API until job id leaves the running state.
func waitJob(t *testing.T, h http.Handler, id string) JobView {
	t.Helper()
	var v JobView
	if err := wait.UntilEvery(context.Background(), 2*time.Second, 10*time.Millisecond, func() bool {
		v = JobView{}
		w := get(t, h, "/api/jobs/"+id)
		wantCode(t, w, 200, "job")
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		return v.State != stateRunning
	}); err != nil {
		t.Fatalf("job %s still running", id)
	}
	return v
}

func TestPagesRenderAndEscape(t *testing.T) {
	f := newFake()
	u := newTestUI(t, f, nil)
	for _, p := range []string{"/", "/?q=alpha", "/file/" + fileID("b").String(), "/get", "/share", "/network", "/static/ui.css", "/static/ui.js"} {
		w := get(t, u, p)
		wantCode(t, w, 200, p)
		body := w.Body.String()
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") || strings.Contains(body, "<b>nick") {
			t.Errorf("%s: a published string reached the page unescaped", p)
		}
		if strings.Contains(body, "\u202e") {
			t.Errorf("%s: a bidi override reached the page", p)
		}
	}
	body := get(t, u, "/").Body.String()
	for _, want := range []string{"alpha.bin", "&lt;script&gt;alert(1)&lt;/script&gt;", "3.0 MiB", "3 of 3 files", `name="csrf" value="` + testToken + `"`} {
		if !strings.Contains(body, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	net := get(t, u, "/network").Body.String()
	for _, want := range []string{"#7", "16 clients", "12D3KooWA", "primary", "pinned", "in the chain", `src="/network/chart.svg"`, `data-api="/api/status"`} {
		if !strings.Contains(net, want) {
			t.Errorf("network page lacks %q", want)
		}
	}
	// The network page updates in place (ui.js), it does not reload.
	if strings.Contains(net, `http-equiv="refresh"`) {
		t.Errorf("the network page reloads itself")
	}
	if w := get(t, u, "/network/chart.svg"); w.Header().Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(w.Body.String(), "<svg") {
		t.Errorf("chart: %q %.80q", w.Header().Get("Content-Type"), w.Body.String())
	}
	var st struct {
		Text map[string]string `json:"text"`
	}
	json.Unmarshal(get(t, u, "/api/status").Body.Bytes(), &st)
	if st.Text["epoch"] != "#7 0a0b0c0d" || st.Text["anonymity"] != "16 clients" {
		t.Errorf("api status text: %v", st.Text)
	}
}

func TestIndexSearchSort(t *testing.T) {
	u := newTestUI(t, newFake(), nil)
	names := func(q string) []string {
		w := get(t, u, "/api/index?"+q)
		wantCode(t, w, 200, q)
		var res struct{ Files []FileView }
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range res.Files {
			out = append(out, f.Name[:3])
		}
		return out
	}
	for q, want := range map[string]string{
		"":                               `"><`, // newest first
		"sort=size&order=asc":            `"><`,
		"sort=size":                      "alp",
		"sort=name":                      `"><`,
		"sort=chunks&order=desc":         "alp",
		"q=ALPHA":                        "alp",
		"q=" + fileID("c").String()[:10]: "Cha",
	} {
		if got := names(q); len(got) == 0 || got[0] != want {
			t.Errorf("%q: first %v, want %q", q, got, want)
		}
	}
	if got := names("q=nothing-matches"); len(got) != 0 {
		t.Errorf("search for nothing found %v", got)
	}
	for _, q := range []string{"sort=evil", "order=sideways", "q=" + strings.Repeat("x", 300)} {
		wantCode(t, get(t, u, "/api/index?"+q), 400, q)
		wantCode(t, get(t, u, "/?"+q), 400, q)
	}
}

func TestFilePage(t *testing.T) {
	u := newTestUI(t, newFake(), nil)
	w := get(t, u, "/api/files/"+fileID("a").String())
	wantCode(t, w, 200, "file")
	var d FileDetail
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.File.Chunks != 12 || len(d.Chunks) != 1 || d.Chunks[0].Role != "manifest" || !d.Chunks[0].Held || d.Listed {
		t.Fatalf("file detail %+v", d)
	}
	page := get(t, u, "/file/"+fileID("a").String()).Body.String()
	if !strings.Contains(page, ">held<") || !strings.Contains(page, "riffle:") {
		t.Errorf("file page lacks held status or link")
	}
	for path, code := range map[string]int{
		"/file/not-an-id":                          400,
		"/api/files/not-an-id":                     400,
		"/file/" + fileID("unknown").String():      404,
		"/api/files/" + fileID("unknown").String(): 404,
		"/jobs/nope":                               404,
		"/api/jobs/nope":                           404,
		"/jobs/nope/file":                          404,
		"/no/such/page":                            404,
		"/static/":                                 404,
		"/static/nope.js":                          404,
		"/static/..%2fui.go":                       404,
	} {
		w := get(t, u, path)
		wantCode(t, w, code, path)
		if strings.HasPrefix(path, "/api/") {
			var e map[string]string
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e["error"] == "" {
				t.Errorf("%s: error is not JSON: %q", path, w.Body.String())
			}
		}
	}
}

func TestGetJobAndDownload(t *testing.T) {
	f := newFake()
	f.block = make(chan struct{})
	u := newTestUI(t, f, nil)
	link := chunker.Link{ID: fileID("a")}.String()
	w := postForm(t, u, "/get", url.Values{"csrf": {testToken}, "link": {link}})
	wantCode(t, w, http.StatusSeeOther, "post get")
	loc := w.Header().Get("Location")
	id := strings.TrimPrefix(loc, "/jobs/")
	// The page of a running job reloads itself; a second get of the same
	// file joins the first.
	page := get(t, u, loc).Body.String()
	if !strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, "running") {
		t.Errorf("running job page: %s", page)
	}
	w = postForm(t, u, "/get", url.Values{"csrf": {testToken}, "link": {link}})
	if w.Header().Get("Location") != loc {
		t.Errorf("second get of one file started another job: %s", w.Header().Get("Location"))
	}
	wantCode(t, get(t, u, loc+"/file"), 404, "download of a running job")
	close(f.block)
	v := waitJob(t, u, id)
	if v.State != stateDone || !strings.HasSuffix(v.Path, "got.bin") || v.Done != 4 {
		t.Fatalf("job %+v", v)
	}
	page = get(t, u, loc).Body.String()
	if strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, "Download") || !strings.Contains(page, v.Path) {
		t.Errorf("finished job page: %s", page)
	}
	w = get(t, u, loc+"/file")
	wantCode(t, w, 200, "download")
	if w.Body.String() != "fetched bytes" || w.Header().Get("Content-Type") != "application/octet-stream" ||
		!strings.HasPrefix(w.Header().Get("Content-Disposition"), "attachment") {
		t.Errorf("download: %q %v", w.Body.String(), w.Header())
	}
	if _, gets := f.counts(); gets != 1 {
		t.Errorf("%d gets, want 1", gets)
	}
	// The file's page now lists the chunks the get learnt, and which are held.
	f.held[fileID("g2")] = true
	var d FileDetail
	json.Unmarshal(get(t, u, "/api/files/"+fileID("a").String()).Body.Bytes(), &d)
	if !d.Listed || !d.Fetched || len(d.Chunks) != 3 || d.Chunks[0].Role != "manifest" || d.Chunks[1].Held || !d.Chunks[2].Held {
		t.Errorf("file detail after a get: %+v", d)
	}
	// The API answers with the job as JSON.
	r := httptest.NewRequest("POST", "/api/get", strings.NewReader("link="+url.QueryEscape(chunker.Link{ID: fileID("c")}.String())))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Riffle-Token", testToken)
	w = do(t, u, r)
	wantCode(t, w, http.StatusAccepted, "api get")
	var j JobView
	if err := json.Unmarshal(w.Body.Bytes(), &j); err != nil || j.Kind != "get" {
		t.Fatalf("api get: %v %+v", err, j)
	}
	waitJob(t, u, j.ID)
}

// TestHostileRequestsChangeNothing sends requests that must be refused
// with a clear 4xx, and checks that no job was started.
func TestHostileRequestsChangeNothing(t *testing.T) {
	f := newFake()
	// Path shares allowed under the temp directory: the path cases below
	// are refused for what they are, not for the allow-list.
	u := newTestUI(t, f, func(o *Options) { o.ShareDirs = []string{os.TempDir()} })
	link := chunker.Link{ID: fileID("a")}.String()
	form := func(v url.Values) *http.Request {
		r := httptest.NewRequest("POST", "/get", strings.NewReader(v.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}
	cases := []struct {
		name string
		req  func() *http.Request
		code int
	}{
		{"missing csrf", func() *http.Request { return form(url.Values{"link": {link}}) }, 403},
		{"wrong csrf", func() *http.Request { return form(url.Values{"link": {link}, "csrf": {"guess"}}) }, 403},
		{"wrong header token", func() *http.Request {
			r := form(url.Values{"link": {link}})
			r.Header.Set("X-Riffle-Token", "guess")
			return r
		}, 403},
		{"wrong host", func() *http.Request {
			r := form(url.Values{"link": {link}, "csrf": {testToken}})
			r.Host = "evil.example:7777"
			return r
		}, 421},
		{"wrong host page", func() *http.Request { r := httptest.NewRequest("GET", "/", nil); r.Host = "evil.example"; return r }, 421},
		{"rebound name, right port", func() *http.Request {
			r := httptest.NewRequest("GET", "/network", nil)
			r.Host = "attacker.test:7777"
			return r
		}, 421},
		{"cross origin", func() *http.Request {
			r := form(url.Values{"link": {link}, "csrf": {testToken}})
			r.Header.Set("Origin", "http://evil.example")
			return r
		}, 403},
		{"cross site fetch", func() *http.Request {
			r := form(url.Values{"link": {link}, "csrf": {testToken}})
			r.Header.Set("Sec-Fetch-Site", "cross-site")
			return r
		}, 403},
		{"same-site fetch (another port)", func() *http.Request {
			r := form(url.Values{"link": {link}, "csrf": {testToken}})
			r.Header.Set("Sec-Fetch-Site", "same-site")
			return r
		}, 403},
		{"other port origin", func() *http.Request {
			r := form(url.Values{"link": {link}, "csrf": {testToken}})
			r.Header.Set("Origin", "http://127.0.0.1:8080")
			return r
		}, 403},
		{"null origin", func() *http.Request {
			r := form(url.Values{"link": {link}, "csrf": {testToken}})
			r.Header.Set("Origin", "null")
			return r
		}, 403},
		{"malformed link", func() *http.Request { return form(url.Values{"link": {"riffle:nope"}, "csrf": {testToken}}) }, 400},
		{"not a link", func() *http.Request { return form(url.Values{"link": {"http://x/<script>"}, "csrf": {testToken}}) }, 400},
		{"empty link", func() *http.Request { return form(url.Values{"csrf": {testToken}}) }, 400},
		{"huge form", func() *http.Request {
			return form(url.Values{"link": {strings.Repeat("a", maxForm)}, "csrf": {testToken}})
		}, 400},
		{"state change by GET", func() *http.Request { return httptest.NewRequest("GET", "/api/get?link="+link, nil) }, 405},
		{"PUT", func() *http.Request { return httptest.NewRequest("PUT", "/get", nil) }, 405},
		{"DELETE", func() *http.Request { return httptest.NewRequest("DELETE", "/api/jobs/x", nil) }, 405},
		{"share without token", func() *http.Request {
			r := httptest.NewRequest("POST", "/share", strings.NewReader("path=/etc/hostname"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, 403},
		{"share relative path", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/share", strings.NewReader("path=etc/hostname"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("X-Riffle-Token", testToken)
			return r
		}, 400},
		{"share missing path", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/share", strings.NewReader("path=/no/such/file/anywhere"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("X-Riffle-Token", testToken)
			return r
		}, 400},
		{"share a directory", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/share", strings.NewReader("path="+url.QueryEscape(os.TempDir())))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("X-Riffle-Token", testToken)
			return r
		}, 400},
		{"upload without token", func() *http.Request { return upload(t, "", "x.bin", []byte("data")) }, 403},
		{"upload with wrong token", func() *http.Request { return upload(t, "guess", "x.bin", []byte("data")) }, 403},
		{"oversized upload", func() *http.Request { return upload(t, testToken, "big.bin", make([]byte, 64<<10)) }, 413},
		{"upload, file before token", func() *http.Request { return uploadFileFirst(t, []byte("data")) }, 403},
		{"upload, no file", func() *http.Request { return upload(t, testToken, "", nil) }, 400},
		{"malformed multipart", func() *http.Request {
			r := httptest.NewRequest("POST", "/share", strings.NewReader("--x\r\nbroken"))
			r.Header.Set("Content-Type", "multipart/form-data; boundary=x")
			return r
		}, 400},
		{"server-only page", func() *http.Request { return httptest.NewRequest("GET", "/api/server", nil) }, 404},
	}
	for _, c := range cases {
		w := do(t, u, c.req())
		if w.Code != c.code {
			t.Errorf("%s: status %d, want %d (%q)", c.name, w.Code, c.code, w.Body.String())
		}
		if w.Code < 400 || w.Code >= 500 || strings.TrimSpace(w.Body.String()) == "" {
			t.Errorf("%s: no clear 4xx: %d %q", c.name, w.Code, w.Body.String())
		}
	}
	if s, g := f.counts(); s != 0 || g != 0 {
		t.Errorf("refused requests ran %d shares and %d gets", s, g)
	}
	if l := u.jobs.list(""); len(l) != 0 {
		t.Errorf("refused requests left jobs: %+v", l)
	}
}

// upload builds a browser-like multipart share: token first, then the
// private flag, then the file.
func upload(t *testing.T, token, name string, data []byte) *http.Request {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if token != "" {
		mw.WriteField("csrf", token)
	}
	mw.WriteField("private", "on")
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(data)
	mw.Close()
	r := httptest.NewRequest("POST", "/share", &b)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	return r
}

func uploadFileFirst(t *testing.T, data []byte) *http.Request {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", "x.bin")
	fw.Write(data)
	mw.WriteField("csrf", testToken)
	mw.Close()
	r := httptest.NewRequest("POST", "/share", &b)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	return r
}

func TestShareUploadAndPath(t *testing.T) {
	f := newFake()
	dir := t.TempDir()
	u := newTestUI(t, f, func(o *Options) { o.ShareDirs = []string{dir} })
	data := []byte("hello riffle")
	w := do(t, u, upload(t, testToken, "../../etc/<evil>.txt", data))
	wantCode(t, w, http.StatusSeeOther, "upload")
	id := strings.TrimPrefix(w.Header().Get("Location"), "/jobs/")
	v := waitJob(t, u, id)
	want := chunker.Link{ID: chunker.ID(sha256.Sum256(data)), Key: new(chunker.FileKey)}.String()
	if v.State != stateDone || v.Link != want || !v.Private || v.Name != "<evil>.txt" {
		t.Fatalf("share job %+v, link want %s", v, want)
	}
	page := get(t, u, "/jobs/"+id).Body.String()
	if !strings.Contains(page, want) || !strings.Contains(page, `data-copy="link"`) || strings.Contains(page, "<evil>") {
		t.Errorf("share job page: %s", page)
	}
	// The file page of a file shared here lists all its chunks.
	f.files = append(f.files, File{ID: chunker.ID(sha256.Sum256(data)), Name: "x", Chunks: 1})
	var d FileDetail
	json.Unmarshal(get(t, u, "/api/files/"+chunker.ID(sha256.Sum256(data)).String()).Body.Bytes(), &d)
	if !d.Listed || len(d.Chunks) != 2 {
		t.Errorf("file detail of a shared file: %+v", d)
	}

	// By path, through the API with the header token.
	p := filepath.Join(dir, "local.txt")
	os.WriteFile(p, []byte("from disk"), 0o600)
	r := httptest.NewRequest("POST", "/api/share", strings.NewReader("path="+url.QueryEscape(p)))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Riffle-Token", testToken)
	w = do(t, u, r)
	wantCode(t, w, http.StatusAccepted, "api share path")
	var j JobView
	json.Unmarshal(w.Body.Bytes(), &j)
	if v := waitJob(t, u, j.ID); v.Name != "local.txt" || v.Private || v.State != stateDone {
		t.Errorf("path share %+v", v)
	}
	if s, _ := f.counts(); s != 2 {
		t.Errorf("%d shares, want 2", s)
	}
	sp := get(t, u, "/share").Body.String()
	if !strings.Contains(sp, "local.txt") || !strings.Contains(sp, "&lt;evil&gt;.txt") {
		t.Errorf("share page does not list the jobs")
	}
}

func TestPublicNeedsToken(t *testing.T) {
	u := newTestUI(t, newFake(), func(o *Options) { o.Addr, o.Public = "0.0.0.0:7777", true })
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "192.0.2.1:7777"
	w := httptest.NewRecorder()
	u.ServeHTTP(w, r)
	wantCode(t, w, 401, "public without token")
	r = httptest.NewRequest("GET", "/network?token="+testToken, nil)
	r.Host = "192.0.2.1:7777"
	w = httptest.NewRecorder()
	u.ServeHTTP(w, r)
	wantCode(t, w, http.StatusSeeOther, "token visit")
	ck := w.Result().Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", ck)
	}
	r = httptest.NewRequest("GET", "/network", nil)
	r.Host = "192.0.2.1:7777"
	r.AddCookie(ck[0])
	w = httptest.NewRecorder()
	u.ServeHTTP(w, r)
	wantCode(t, w, 200, "with cookie")
	r = httptest.NewRequest("GET", "/api/status", nil)
	r.Host = "192.0.2.1:7777"
	r.Header.Set("X-Riffle-Token", testToken)
	w = httptest.NewRecorder()
	u.ServeHTTP(w, r)
	wantCode(t, w, 200, "with header")
}

func TestCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr   string
		public bool
		ok     bool
		warn   bool
	}{
		{"127.0.0.1:7777", false, true, false},
		{"[::1]:7777", false, true, false},
		{"localhost:7777", false, true, false},
		{"0.0.0.0:7777", false, false, false},
		{"192.0.2.1:7777", false, false, false},
		{"0.0.0.0:7777", true, true, true},
		{"7777", false, false, false},
	} {
		warn, err := CheckAddr(c.addr, c.public)
		if (err == nil) != c.ok || (warn != "") != c.warn {
			t.Errorf("CheckAddr(%q, %v) = %q, %v", c.addr, c.public, warn, err)
		}
	}
}

func TestHistoryAndChart(t *testing.T) {
	var h history
	at := t0
	h.observe(at, 10, "e1")
	h.observe(at.Add(time.Second), 12, "e1")           // two rounds in 1 s
	h.observe(at.Add(1500*time.Millisecond), 12, "e2") // the gap between epochs is no round
	h.observe(at.Add(3*time.Second), 14, "e2")
	s, round := h.snapshot(14)
	if len(s) != 4 || s[0].Time != 500*time.Millisecond || s[3].Time != 750*time.Millisecond || round != 2 {
		t.Fatalf("samples %+v, round %d", s, round)
	}
	svg := string(chartSVG(s))
	if !strings.Contains(svg, "<polyline") || !strings.Contains(svg, "750ms") {
		t.Errorf("chart %s", svg)
	}
	if !strings.Contains(string(chartSVG(nil)), "no rounds") {
		t.Errorf("empty chart")
	}
	for i := range 3 * maxSamples {
		h.observe(at.Add(time.Duration(4+i)*time.Second), 15+i, "e2")
	}
	if s, _ := h.snapshot(0); len(s) != maxSamples {
		t.Errorf("%d samples kept, want %d", len(s), maxSamples)
	}
}

type fakeServer struct{ st ServerStatus }

func (f *fakeServer) Status() ServerStatus { return f.st }

func TestServerUI(t *testing.T) {
	fs := &fakeServer{st: ServerStatus{PeerID: "12D3KooWSelf", Nick: "<i>me</i>", Chain: []string{"12D3KooWOther", "12D3KooWSelf"},
		Roster:      []RosterEntry{{PeerID: "12D3KooWOther", Nick: "other<script>", Addrs: []string{"/ip4/127.0.0.1/tcp/1"}, Seen: t0}},
		Epochs:      []EpochInfo{{ID: "aabbccdd", Number: 3, Clients: 16, Rounds: 64, Listed: 10, Void: []uint32{4}, RecentChunks: []RoundChunks{{8, 1}, {9, 3}}}, {ID: "11223344", Number: 2, Ended: true, Reason: "rounds done"}},
		TimedRounds: 5, PIR: 50 * time.Millisecond, StoreBytes: 512 << 20, QuotaBytes: 1 << 30}}
	u, err := NewServerUI(fs, Options{Addr: "127.0.0.1:7778", Token: testToken, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	u.hist.observePIR(t0, 5, "aabbccdd", 50*time.Millisecond, 5)
	u.hist.observePIR(t0.Add(time.Second), 7, "aabbccdd", 90*time.Millisecond, 7)
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "127.0.0.1:7778"
	w := httptest.NewRecorder()
	u.ServeHTTP(w, r)
	wantCode(t, w, 200, "server page")
	body := w.Body.String()
	for _, want := range []string{"12D3KooWOther", "other&lt;script&gt;", "&lt;i&gt;me&lt;/i&gt;", "512.0 MiB of 1.0 GiB (50%)", "2.0 (rounds still kept", "ended: rounds done", "500ms", "20ms", "<svg"} {
		if !strings.Contains(body, want) {
			t.Errorf("server page lacks %q", want)
		}
	}
	r = httptest.NewRequest("GET", "/api/server", nil)
	r.Host = "127.0.0.1:7778"
	w = httptest.NewRecorder()
	u.ServeHTTP(w, r)
	var v map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v["chunks_per_round"] != 2.0 || v["quota_percent"] != 50.0 {
		t.Errorf("api: %v %v", err, v)
	}
	for _, c := range []struct {
		method, host, path string
		code               int
	}{
		{"POST", "127.0.0.1:7778", "/", 405},
		{"POST", "127.0.0.1:7778", "/api/server", 405},
		{"GET", "evil.example:7778", "/", 421},
		{"GET", "127.0.0.1:7778", "/get", 404},
		{"GET", "127.0.0.1:7778", "/api/status", 404},
	} {
		r := httptest.NewRequest(c.method, c.path, strings.NewReader("csrf="+testToken))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Host = c.host
		w := httptest.NewRecorder()
		u.ServeHTTP(w, r)
		if w.Code != c.code {
			t.Errorf("%s %s (Host %s): %d, want %d", c.method, c.path, c.host, w.Code, c.code)
		}
	}
}

func TestJobsBounded(t *testing.T) {
	js := jobs{now: func() time.Time { return t0 }}
	for i := range maxJobs + 10 {
		js.add(&job{ID: fmt.Sprint(i), State: stateDone, Started: t0.Add(time.Duration(i) * time.Second)})
	}
	if n := len(js.list("")); n != maxJobs {
		t.Fatalf("%d jobs kept, want %d", n, maxJobs)
	}
	if _, ok := js.get("0"); ok {
		t.Errorf("the oldest job was kept")
	}
}

var _ = errors.New

// TestResumePausedJob (docs/protocol.md §5.4): a paused job's page says
// why and offers a resume form; the resume is a POST that needs the token,
// reaches the client with the job's file id, and clears the pause; a job
// not paused is not resumed.
func TestResumePausedJob(t *testing.T) {
	f := newFake()
	f.block = make(chan struct{})
	f.pause = "paused: this job sent real traffic in 8 epochs; run `riffle resume`"
	u := newTestUI(t, f, nil)
	link := chunker.Link{ID: fileID("a")}
	w := postForm(t, u, "/get", url.Values{"csrf": {testToken}, "link": {link.String()}})
	wantCode(t, w, http.StatusSeeOther, "post get")
	loc := w.Header().Get("Location")
	id := strings.TrimPrefix(loc, "/jobs/")
	if err := wait.UntilEvery(context.Background(), 10*time.Second, 5*time.Millisecond, func() bool { v, _ := u.jobs.get(id); return v.Paused != "" }); err != nil {
		t.Fatal("the job never showed its pause")
	}
	page := get(t, u, loc).Body.String()
	if !strings.Contains(page, "sent real traffic in 8 epochs") || !strings.Contains(page, `action="/jobs/`+id+`/resume"`) || !strings.Contains(page, `name="csrf" value="`+testToken+`"`) {
		t.Fatalf("paused job page: %s", page)
	}
	wantCode(t, postForm(t, u, loc+"/resume", url.Values{}), http.StatusForbidden, "resume without token")
	wantCode(t, postForm(t, u, loc+"/resume", url.Values{"csrf": {"guess"}}), http.StatusForbidden, "resume with a wrong token")
	f.mu.Lock()
	n := len(f.resumed)
	f.mu.Unlock()
	if n != 0 {
		t.Fatal("a resume without the token reached the client")
	}
	wantCode(t, postForm(t, u, "/jobs/nope/resume", url.Values{"csrf": {testToken}}), http.StatusNotFound, "resume of no job")
	w = postForm(t, u, loc+"/resume", url.Values{"csrf": {testToken}})
	wantCode(t, w, http.StatusSeeOther, "resume")
	f.mu.Lock()
	resumed := append([]chunker.ID(nil), f.resumed...)
	f.mu.Unlock()
	if len(resumed) != 1 || resumed[0] != link.ID || w.Header().Get("Location") != loc {
		t.Fatalf("resumed %v, redirect %q", resumed, w.Header().Get("Location"))
	}
	if v, _ := u.jobs.get(id); v.Paused != "" {
		t.Fatalf("still paused after resume: %+v", v)
	}
	wantCode(t, postForm(t, u, loc+"/resume", url.Values{"csrf": {testToken}}), http.StatusConflict, "resume of a job not paused")
	wantCode(t, postForm(t, u, loc+"/cancel", url.Values{"csrf": {testToken}}), http.StatusConflict, "cancel of a job not paused")
	close(f.block)
	waitJob(t, u, id)
}

// TestJobSaysWhatItWaitsFor (issue 27 point 4): a get that waits for an
// epoch before its first figures says so on its page and in the API, not
// "0/0 chunks" alone; once it moves, the line goes.
func TestJobSaysWhatItWaitsFor(t *testing.T) {
	f := newFake()
	f.block = make(chan struct{})
	f.waiting = "waiting for the next epoch: epoch 9 is running at the primary (round 3 of 64, about 40s left); this client joins the one after it"
	u := newTestUI(t, f, nil)
	w := postForm(t, u, "/get", url.Values{"csrf": {testToken}, "link": {chunker.Link{ID: fileID("a")}.String()}})
	wantCode(t, w, http.StatusSeeOther, "post get")
	loc := w.Header().Get("Location")
	id := strings.TrimPrefix(loc, "/jobs/")
	if err := wait.UntilEvery(context.Background(), 10*time.Second, 5*time.Millisecond, func() bool { v, _ := u.jobs.get(id); return v.Waiting != "" }); err != nil {
		t.Fatal("the job never said what it waits for")
	}
	if page := get(t, u, loc).Body.String(); !strings.Contains(page, `id="waiting"`) || !strings.Contains(page, "about 40s left") {
		t.Fatalf("waiting job page: %s", page)
	}
	if v, _ := u.jobs.get(id); v.Total != 0 || v.Rate != 0 {
		t.Fatalf("a waiting get shows figures: %+v", v)
	}
	close(f.block)
	waitJob(t, u, id)
	if page := get(t, u, loc).Body.String(); strings.Contains(page, `id="waiting"`) {
		t.Fatalf("a finished job still says it waits: %s", page)
	}
}

// TestCancelPausedJob: a paused job's page offers to cancel it instead; the
// cancel needs the token and ends the job's context, so the client
// withdraws it.
func TestCancelPausedJob(t *testing.T) {
	f := newFake()
	f.block = make(chan struct{})
	defer close(f.block)
	f.pause = "paused: this job sent real traffic in 8 epochs"
	u := newTestUI(t, f, nil)
	w := postForm(t, u, "/get", url.Values{"csrf": {testToken}, "link": {chunker.Link{ID: fileID("a")}.String()}})
	wantCode(t, w, http.StatusSeeOther, "post get")
	loc := w.Header().Get("Location")
	id := strings.TrimPrefix(loc, "/jobs/")
	if err := wait.UntilEvery(context.Background(), 10*time.Second, 5*time.Millisecond, func() bool { v, _ := u.jobs.get(id); return v.Paused != "" }); err != nil {
		t.Fatal("the job never showed its pause")
	}
	if page := get(t, u, loc).Body.String(); !strings.Contains(page, `action="/jobs/`+id+`/cancel"`) {
		t.Fatalf("paused job page without a cancel form: %s", page)
	}
	wantCode(t, postForm(t, u, loc+"/cancel", url.Values{}), http.StatusForbidden, "cancel without token")
	if v, _ := u.jobs.get(id); v.State != stateRunning {
		t.Fatalf("a cancel without the token ended the job: %+v", v)
	}
	wantCode(t, postForm(t, u, loc+"/cancel", url.Values{"csrf": {testToken}}), http.StatusSeeOther, "cancel")
	v := waitJob(t, u, id)
	if v.State != stateFailed || !strings.Contains(v.Error, "canceled") {
		t.Fatalf("cancelled job %+v", v)
	}
}

// TestSharePathAllowList: a path share works only under a --share-dir
// (symlinks resolved first), never inside the data directory: the UI's
// token file, a path outside the allowed directories and a link out of one
// are refused with a reason, and nothing is shared; an allowed file is.
func TestSharePathAllowList(t *testing.T) {
	root := t.TempDir()
	home, allowed, outside := filepath.Join(root, "home"), filepath.Join(root, "allowed"), filepath.Join(root, "outside")
	data := filepath.Join(home, ".riffle")
	for _, d := range []string{data, allowed, outside} {
		os.MkdirAll(d, 0o700)
	}
	token := filepath.Join(data, "ui.token")
	os.WriteFile(token, []byte(testToken+"\n"), 0o600)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(allowed, "ok.txt"), []byte("shared on purpose"), 0o600)
	if err := os.Symlink(token, filepath.Join(allowed, "token-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(allowed, "dir-link")); err != nil {
		t.Fatal(err)
	}
	sharePath := func(u *UI, p string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/api/share", strings.NewReader("path="+url.QueryEscape(p)))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("X-Riffle-Token", testToken)
		return do(t, u, r)
	}
	refused := func(u *UI, p, want string) {
		t.Helper()
		w := sharePath(u, p)
		var e map[string]string
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != http.StatusForbidden || !strings.Contains(e["error"], want) {
			t.Errorf("share %s: %d %q, want 403 saying %q", p, w.Code, e["error"], want)
		}
	}

	// By default (no --share-dir) no path is shared, not even the token.
	f := newFake()
	u := newTestUI(t, f, func(o *Options) { o.DataDir = data })
	refused(u, token, "--share-dir")
	if page := get(t, u, "/share").Body.String(); strings.Contains(page, `name="path"`) || !strings.Contains(page, "Sharing by path is off") {
		t.Errorf("share page without --share-dir offers a path field")
	}

	// The data directory is refused even when a share directory holds it.
	f2 := newFake()
	u2 := newTestUI(t, f2, func(o *Options) { o.DataDir, o.ShareDirs = data, []string{allowed, home} })
	refused(u2, token, "data directory")
	refused(u2, filepath.Join(allowed, "token-link"), "data directory")
	refused(u2, filepath.Join(outside, "secret.txt"), "not under a directory allowed")
	refused(u2, filepath.Join(allowed, "dir-link", "secret.txt"), "not under a directory allowed")
	refused(u2, filepath.Join(allowed, "..", "outside", "secret.txt"), "not under a directory allowed")
	if s, _ := f.counts(); s != 0 {
		t.Errorf("%d shares by default, want 0", s)
	}
	if s, _ := f2.counts(); s != 0 {
		t.Errorf("%d refused shares reached the client", s)
	}
	w := sharePath(u2, filepath.Join(allowed, "ok.txt"))
	wantCode(t, w, http.StatusAccepted, "share of an allowed file")
	var j JobView
	json.Unmarshal(w.Body.Bytes(), &j)
	if v := waitJob(t, u2, j.ID); v.Name != "ok.txt" || v.State != stateDone {
		t.Errorf("allowed share %+v", v)
	}
	if page := get(t, u2, "/share").Body.String(); !strings.Contains(page, `name="path"`) || !strings.Contains(page, allowed) {
		t.Errorf("share page does not name the allowed directories")
	}
	if _, err := New(t.Context(), newFake(), Options{Addr: testAddr, DownloadDir: t.TempDir(), ShareDirs: []string{filepath.Join(outside, "missing")}}); err == nil {
		t.Errorf("a missing share directory was accepted")
	}
}

// TestErrorPage: a refused page request gets an HTML page with the reason
// (escaped) and a way back, a bad link back to the Get form with the link
// kept for its correction (issue 27 point 9: a bare "400" text page); the
// API keeps its JSON errors.
func TestErrorPage(t *testing.T) {
	u := newTestUI(t, newFake(), nil)
	bad := "riffle:nope<script>alert(1)</script>"
	w := postForm(t, u, "/get", url.Values{"csrf": {testToken}, "link": {bad}})
	wantCode(t, w, http.StatusBadRequest, "bad link")
	body := w.Body.String()
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("bad link: Content-Type %q", ct)
	}
	for _, want := range []string{"<!doctype html>", `id="reason"`, "bad link", `id="back"`, `href="/get?link=riffle%3anope%3cscript%3ealert%281%29%3c%2fscript%3e"`, "correct the link"} {
		if !strings.Contains(strings.ToLower(body), strings.ToLower(want)) {
			t.Errorf("error page lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Errorf("error page does not escape the reason:\n%s", body)
	}
	// Following the way back fills the form with the link.
	if page := get(t, u, "/get?link="+url.QueryEscape(bad)).Body.String(); !strings.Contains(page, `value="riffle:nope&lt;script&gt;`) {
		t.Errorf("the Get form does not keep the link")
	}
	w = get(t, u, "/no/such/page")
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || !strings.Contains(w.Body.String(), `href="/"`) || !strings.Contains(w.Body.String(), "no such page") {
		t.Errorf("404 page: %s", w.Body.String())
	}
	w = get(t, u, "/api/files/not-an-id")
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		t.Errorf("API error: %s", w.Body.String())
	}
}

// TestManifestShownAsManifest: a file's page shows its root manifest as
// the list of the file's chunks, and a chunk not fetched here in plain
// grey, not in the red of a fault (issue 27 point 9).
func TestManifestShownAsManifest(t *testing.T) {
	u := newTestUI(t, newFake(), nil)
	page := get(t, u, "/file/"+fileID("c").String()).Body.String()
	i := strings.Index(page, `<table id="chunks">`)
	if i < 0 {
		t.Fatalf("no chunks table:\n%s", page)
	}
	rows := page[i:]
	if !strings.Contains(rows, "manifest: the list of the file") || !strings.Contains(rows, "not fetched here") || strings.Contains(rows, `class="no"`) {
		t.Errorf("manifest row: %s", rows)
	}
	// A held chunk still says so.
	if rows := get(t, u, "/file/"+fileID("a").String()).Body.String(); !strings.Contains(rows, `<span class="yes">held</span>`) {
		t.Errorf("held manifest row: %s", rows)
	}
}
