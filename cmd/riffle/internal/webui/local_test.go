package webui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/client"

	"github.com/riffle-net/riffle/chunker"
)

// The fake as a Daemon: what the local socket's own endpoints need.

func (f *fakeClient) ClientStatus() client.ClientStatus {
	return client.ClientStatus{Primary: "12D3KooWA", Require: []string{}, MinAnonymity: 2, DataDir: "/data"}
}

func (f *fakeClient) WaitIndex(context.Context) error { return nil }

func (f *fakeClient) ResumeFile(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pause == "" {
		return 0
	}
	if id != "" {
		fid, _ := chunker.ParseID(id)
		f.resumed = append(f.resumed, fid)
	}
	return 1
}

// serveLocal serves u's local API in a fresh private directory and
// returns the socket's path.
func serveLocal(t *testing.T, u *UI) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), SocketFile)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.ServeLocal(ctx, sock) }()
	if err := wait.Until(ctx, 10*time.Second, func() bool { return Available(sock) }); err != nil {
		t.Fatalf("local socket never served: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return sock
}

func dialLocal(t *testing.T, sock string) *LocalClient {
	t.Helper()
	lc, err := DialLocal(sock)
	if err != nil {
		t.Fatal(err)
	}
	return lc
}

// events records a job's events.
type events struct {
	mu sync.Mutex
	l  []client.JobEvent
}

func (e *events) add(ev client.JobEvent) { e.mu.Lock(); e.l = append(e.l, ev); e.mu.Unlock() }

func (e *events) phases() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.l {
		out = append(out, ev.Phase)
	}
	return out
}

// TestLocalSocket: the CLI's jobs over the local socket, the same
// handlers as the browser's: status, share by path and get into a
// directory with their events streamed, the index, resume; the socket is
// the user's alone and a second client cannot take it over.
func TestLocalSocket(t *testing.T) {
	f := newFake()
	f.waiting = "waiting for the primary to open an epoch"
	u := newTestUI(t, f, nil)
	sock := serveLocal(t, u)
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v", st.Mode().Perm(), err)
	}
	u2 := newTestUI(t, newFake(), nil)
	if err := u2.ServeLocal(t.Context(), sock); err == nil {
		t.Fatal("a second client took over a live local socket")
	}
	lc := dialLocal(t, sock)
	ctx := t.Context()
	st, err := lc.Status(ctx)
	if err != nil || st.Primary != "12D3KooWA" || st.MinAnonymity != 2 {
		t.Fatalf("status: %+v, %v", st, err)
	}
	// A share by absolute path, from anywhere: the user's own file.
	file := filepath.Join(t.TempDir(), "local.bin")
	if err := os.WriteFile(file, []byte("local bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	var se events
	link, err := lc.Share(ctx, file, false, 0, se.add)
	if err != nil || link.ID != chunker.Sum([]byte("local bytes")) {
		t.Fatalf("share: %v %v", link, err)
	}
	if p := se.phases(); len(p) == 0 || p[len(p)-1] != client.PhaseShared {
		t.Fatalf("share events %v, want the client's, ending with shared", p)
	}
	// A get into the caller's directory; the events say what it waited
	// for, then how far it is.
	dir := t.TempDir()
	var ge events
	path, err := lc.Get(ctx, chunker.Link{ID: fileID("a")}, dir, 0, 4, ge.add)
	if err != nil || path != filepath.Join(dir, "got.bin") {
		t.Fatalf("get: %q %v", path, err)
	}
	ge.mu.Lock()
	if len(ge.l) < 2 || ge.l[0].Phase != client.PhaseWaiting || ge.l[0].Waiting != f.waiting || ge.l[0].Kind != "get" || ge.l[0].Job == "" {
		t.Fatalf("get events %+v", ge.l)
	}
	ge.mu.Unlock()
	if b, err := os.ReadFile(path); err != nil || string(b) != "fetched bytes" {
		t.Fatalf("fetched %q %v", b, err)
	}
	// The job is the UI's like any other: the browser's page shows it,
	// but a file fetched outside the download directory is not offered
	// for download there.
	v := u.jobs.list("get")
	if len(v) != 1 || v[0].State != stateDone {
		t.Fatalf("jobs %+v", v)
	}
	wantCode(t, get(t, u, "/jobs/"+v[0].ID+"/file"), http.StatusNotFound, "download of a file fetched for the CLI")
	idx, err := lc.Index(ctx)
	if err != nil || len(idx) != 3 {
		t.Fatalf("index: %d entries, %v", len(idx), err)
	}
	if n, err := lc.Resume(ctx, ""); err != nil || n != 0 {
		t.Fatalf("resume with nothing paused: %d %v", n, err)
	}
	f.mu.Lock()
	f.pause = "paused"
	f.mu.Unlock()
	if n, err := lc.Resume(ctx, fileID("a").String()); err != nil || n != 1 || len(f.resumed) != 1 || f.resumed[0] != fileID("a") {
		t.Fatalf("resume: %d %v %v", n, err, f.resumed)
	}
	if _, err := lc.Resume(ctx, "not-an-id"); err == nil {
		t.Fatal("resume of a malformed id accepted")
	}
	// A missing file is refused with the reason, and no job is left.
	if _, err := lc.Share(ctx, filepath.Join(t.TempDir(), "missing"), false, 0, nil); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("share of a missing file: %v", err)
	}
}

// TestLocalCancel: a command's end (Ctrl-C, --timeout) closes its stream,
// which cancels the job, and the command reads what became of it.
func TestLocalCancel(t *testing.T) {
	f := newFake()
	f.block = make(chan struct{})
	f.waiting = "waiting for an epoch"
	u := newTestUI(t, f, nil)
	lc := dialLocal(t, serveLocal(t, u))
	ctx, cancel := context.WithCancel(t.Context())
	var ev events
	done := make(chan error, 1)
	go func() {
		_, err := lc.Get(ctx, chunker.Link{ID: fileID("a")}, t.TempDir(), 0, 0, ev.add)
		done <- err
	}()
	if err := wait.Until(context.Background(), 10*time.Second, func() bool { return len(ev.phases()) > 0 }); err != nil {
		t.Fatalf("no event before the cancel: %v", err)
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled get: %v", err)
	}
	v := u.jobs.list("get")
	if len(v) != 1 || v[0].State != stateFailed || !strings.Contains(v[0].Error, "context canceled") || err.Error() != v[0].Error {
		t.Fatalf("cancelled get: %v; jobs %+v", err, v)
	}
}

// TestLocalOnly: what only the local socket takes (the client's status,
// a get into another directory, a share of any path) is refused on the
// TCP UI; the socket takes no request a browser made, serves no page,
// and takes bounded bodies.
func TestLocalOnly(t *testing.T) {
	f := newFake()
	u := newTestUI(t, f, nil)
	wantCode(t, get(t, u, "/api/client"), http.StatusNotFound, "status over TCP")
	w := postForm(t, u, "/api/get", url.Values{"csrf": {testToken}, "link": {chunker.Link{ID: fileID("a")}.String()}, "dir": {t.TempDir()}})
	wantCode(t, w, http.StatusForbidden, "get into a directory over TCP")
	w = postForm(t, u, "/api/share", url.Values{"csrf": {testToken}, "path": {"/etc/passwd"}})
	wantCode(t, w, http.StatusForbidden, "share of any path over TCP")
	if _, g := f.counts(); g != 0 {
		t.Fatal("a refused get ran")
	}
	sock := serveLocal(t, u)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	for _, tc := range []struct {
		method, path, body string
		header             map[string]string
		code               int
	}{
		{"GET", "/api/client", "", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"POST", "/api/get", "link=x", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"GET", "/", "", nil, http.StatusNotFound},
		{"DELETE", "/api/jobs", "", nil, http.StatusMethodNotAllowed},
		{"POST", "/api/get", "link=" + strings.Repeat("a", 2*maxForm), nil, http.StatusBadRequest},
		{"POST", "/api/get", "link=riffle:" + fileID("a").String() + "&dir=relative", nil, http.StatusBadRequest},
		{"POST", "/api/get", "link=riffle:" + fileID("a").String() + "&max_epochs=99", nil, http.StatusBadRequest},
		{"POST", "/api/share", "path=relative/file", nil, http.StatusBadRequest},
	} {
		r, _ := http.NewRequest(tc.method, "http://riffle"+tc.path, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s %v: %d, want %d", tc.method, tc.path, tc.header, resp.StatusCode, tc.code)
		}
	}
	if _, g := f.counts(); g != 0 {
		t.Fatal("a refused get ran")
	}
}

// TestLocalSocketPrivate: no socket is served, nor one trusted, in a
// directory another user could write (they could put their own socket in
// its place and be handed the user's jobs); no client is a clear error.
func TestLocalSocketPrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	u := newTestUI(t, newFake(), nil)
	sock := filepath.Join(dir, SocketFile)
	sctx, cancel := context.WithTimeout(t.Context(), 2*time.Second) // a socket served would be until then
	defer cancel()
	if err := u.ServeLocal(sctx, sock); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("served in a directory all may write: %v", err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := DialLocal(sock); err == nil || errors.Is(err, ErrNoClient) {
		t.Fatalf("trusted a socket in a directory all may write: %v", err)
	}
	if _, err := DialLocal(filepath.Join(t.TempDir(), SocketFile)); !errors.Is(err, ErrNoClient) {
		t.Fatalf("no client: %v", err)
	}
	notSock := filepath.Join(t.TempDir(), SocketFile)
	os.WriteFile(notSock, nil, 0o600)
	if _, err := DialLocal(notSock); err == nil || errors.Is(err, ErrNoClient) {
		t.Fatalf("a plain file taken for a socket: %v", err)
	}
}

// TestJobOptions: a job's bounds come from its form; a get's bound on
// unlisted epochs is what the command gave (0: none), absent none.
func TestJobOptions(t *testing.T) {
	for _, tc := range []struct {
		form          string
		max, unlisted int
		ok            bool
	}{
		{"", 0, 0, true},
		{"unlisted_epochs=4", 0, 4, true},
		{"unlisted_epochs=0", 0, 0, true},
		{"unlisted_epochs=5&max_epochs=3", 3, 5, true},
		{fmt.Sprintf("max_epochs=%d", client.JobEpochs), client.JobEpochs, 0, true},
		{"max_epochs=0", 0, 0, false},
		{fmt.Sprintf("max_epochs=%d", client.JobEpochs+1), 0, 0, false},
		{"unlisted_epochs=256", 0, 0, false},
		{"unlisted_epochs=-1", 0, 0, false},
	} {
		r, _ := http.NewRequest("POST", "/api/get", strings.NewReader(tc.form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.ParseForm()
		o, _, err := jobOptions(r)
		if (err == nil) != tc.ok || tc.ok && (o.maxEpochs != tc.max || o.unlisted != tc.unlisted) {
			t.Errorf("%q: %+v %v", tc.form, o, err)
		}
	}
}
