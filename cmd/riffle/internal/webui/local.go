package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client"
)

// The local API: the UI's handlers on a Unix socket in the client's data
// directory, which `riffle share`, `get`, `ls`, `status` and `resume` use
// to hand their jobs to a running client (docs/webui.md). Only the user
// reaches it: the socket is mode 0600 in a directory no one else may
// write, so it needs no Host check or token; a request that a browser
// made (Origin, Sec-Fetch-Site) is refused all the same.

// SocketFile is the local API's socket in a client's data directory.
const SocketFile = "api.sock"

// Daemon is what the local socket's own endpoints need of a client
// besides Client (NodeClient has it).
type Daemon interface {
	// ClientStatus is the client's settings and state (GET /api/client).
	ClientStatus() client.ClientStatus
	// WaitIndex returns once the client has synced the index once.
	WaitIndex(ctx context.Context) error
	// ResumeFile resumes the paused jobs of file id ("" every one).
	ResumeFile(id string) int
}

// localKey marks the context of a request that came over the socket.
type localKey struct{}

func local(r *http.Request) bool { v, _ := r.Context().Value(localKey{}).(bool); return v }

// Local returns the handler of the local socket: the UI's API only.
func (u *UI) Local() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" {
			httpError(w, r, http.StatusForbidden, "a browser's request on the local socket refused")
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			httpError(w, r, http.StatusNotFound, "the local socket serves /api/ only")
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodPost:
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			httpError(w, r, http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
			return
		}
		ctx := context.WithValue(context.WithValue(r.Context(), tokenChecked{}, true), localKey{}, true)
		u.mux.ServeHTTP(w, r.WithContext(ctx))
	})
}

// ServeLocal serves the local API on the Unix socket path until ctx ends;
// streams under way go on until their jobs end.
func (u *UI) ServeLocal(ctx context.Context, path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("webui: socket directory: %w", err)
	}
	if err := privateDir(dir); err != nil {
		return err
	}
	// A socket left by a dead client is removed; a live one refuses us.
	if Available(path) {
		return fmt.Errorf("webui: a client already serves %s", path)
	}
	os.Remove(path)
	// Made under another name and renamed once its mode is 0600: the
	// socket is never reachable at path with the umask's mode.
	tmp := path + ".new"
	os.Remove(tmp)
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return fmt.Errorf("webui: local socket: %w", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		l.Close()
		os.Remove(tmp)
		return fmt.Errorf("webui: local socket mode: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		l.Close()
		os.Remove(tmp)
		return fmt.Errorf("webui: local socket: %w", err)
	}
	srv := &http.Server{Handler: u.Local(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		os.Remove(path)
		go srv.Shutdown(context.Background()) // returns when the streams end
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webui: local socket: %w", err)
	}
	return nil
}

// privateDir refuses a socket directory that another user could write
// into: they could put a socket of their own in place of the client's.
func privateDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("webui: socket directory: %w", err)
	}
	if st.Mode().Perm()&0o022 != 0 || !ownedByMe(st) {
		return fmt.Errorf("webui: %s (mode %v) is not the user's own: another user could put a socket of theirs in its place; chmod 700 it", dir, st.Mode().Perm())
	}
	return nil
}

// Available reports whether a client serves the local socket path.
func Available(path string) bool {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// jobOpts are a job's options from its form (docs/webui.md).
type jobOpts struct {
	stream    bool   // answer with the job's events
	maxEpochs int    // max_epochs, 0: the network's J
	unlisted  int    // unlisted_epochs, 0: no bound
	dir       string // a get's directory (local socket only)
}

// maxUnlisted bounds unlisted_epochs.
const maxUnlisted = 255

func jobOptions(r *http.Request) (jobOpts, int, error) {
	f := r.PostForm
	o := jobOpts{stream: formBool(f.Get("stream"))}
	num := func(key string, lo, hi int) (int, error) {
		s := f.Get(key)
		if s == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%s %q: give %d to %d", key, s, lo, hi)
		}
		return n, nil
	}
	var err error
	if o.maxEpochs, err = num("max_epochs", 1, client.JobEpochs); err != nil {
		return o, http.StatusBadRequest, err
	}
	if o.unlisted, err = num("unlisted_epochs", 0, maxUnlisted); err != nil {
		return o, http.StatusBadRequest, err
	}
	if d := f.Get("dir"); d != "" {
		// The browser's gets go to the download directory; another
		// directory is the local user's own choice.
		if !local(r) {
			return o, http.StatusForbidden, errors.New("dir is taken only on the local socket")
		}
		if len(d) > maxField || !filepath.IsAbs(d) {
			return o, http.StatusBadRequest, fmt.Errorf("dir %q is not an absolute path", d)
		}
		o.dir = d
	}
	return o, 0, nil
}

// context returns the job's context: its bounds, and its events to emit.
func (o jobOpts) context(ctx context.Context, emit func(client.JobEvent)) context.Context {
	if o.maxEpochs > 0 {
		ctx = client.WithMaxEpochs(ctx, o.maxEpochs)
	}
	if o.unlisted > 0 {
		ctx = client.WithUnlistedEpochs(ctx, o.unlisted)
	}
	return client.WithProgress(ctx, emit)
}

// follower carries a job's events to the request that started it with
// stream=1 (nobody follows the others: their events are dropped).
type follower struct {
	job, kind string
	events    chan client.JobEvent
	ended     chan client.JobEvent
}

// eventBuffer is the events a follower may lag behind by: a slow one
// loses events, never holds up the job.
const eventBuffer = 64

// eventWrite bounds the write of one event.
const eventWrite = 10 * time.Second

func newFollower(j *job, stream bool) *follower {
	f := &follower{job: j.ID, kind: j.Kind}
	if stream {
		f.events, f.ended = make(chan client.JobEvent, eventBuffer), make(chan client.JobEvent, 1)
	}
	return f
}

func (f *follower) emit(e client.JobEvent) {
	if f.events == nil {
		return
	}
	e.Job, e.Kind = f.job, f.kind
	select {
	case f.events <- e:
	default:
	}
}

// end sends the job's last event: done, with e's link or path, or failed.
func (f *follower) end(err error, e client.JobEvent) {
	if f.ended == nil {
		return
	}
	e.Job, e.Kind, e.Phase = f.job, f.kind, client.PhaseDone
	if err != nil {
		e = client.JobEvent{Job: f.job, Kind: f.kind, Phase: client.PhaseFailed, Error: err.Error()}
	}
	f.ended <- e
}

// follow answers with the job's events, one JSON object a line, from
// started to done or failed. The job is cancelled when its follower goes
// (Ctrl-C on `riffle share`); GET /api/jobs/{id} then says what became
// of it.
func (f *follower) follow(w http.ResponseWriter, r *http.Request, cancel func()) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(e client.JobEvent) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWrite))
		b, _ := json.Marshal(e)
		if _, err := w.Write(append(b, '\n')); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(client.JobEvent{Job: f.job, Kind: f.kind, Phase: client.PhaseStarted}) {
		cancel()
		return
	}
	for {
		select {
		case e := <-f.events:
			if !write(e) {
				cancel()
				return
			}
		case last := <-f.ended:
			for more := true; more; {
				select {
				case e := <-f.events:
					write(e)
				default:
					more = false
				}
			}
			write(last)
			return
		case <-r.Context().Done():
			cancel()
			return
		}
	}
}

// apiClient answers the client's settings and state, on the local socket
// only: they name its data directory.
func (u *UI) apiClient(w http.ResponseWriter, r *http.Request) {
	d, ok := u.c.(Daemon)
	if !ok || !local(r) {
		httpError(w, r, http.StatusNotFound, "no such page: %s %s", r.Method, r.URL.Path)
		return
	}
	writeJSON(w, http.StatusOK, d.ClientStatus())
}

// postResumeFile resumes the paused jobs of a file, or every one: what
// `riffle resume` asks for (the guard has checked the token).
func (u *UI) postResumeFile(w http.ResponseWriter, r *http.Request) {
	d, ok := u.c.(Daemon)
	if !ok {
		httpError(w, r, http.StatusNotFound, "no such page: %s %s", r.Method, r.URL.Path)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		httpError(w, r, http.StatusBadRequest, "bad form: %v", err)
		return
	}
	id := r.PostForm.Get("file")
	if id != "" {
		fid, err := chunker.ParseID(id)
		if err != nil {
			httpError(w, r, http.StatusBadRequest, "file: %v", err)
			return
		}
		id = fid.String()
	}
	writeJSON(w, http.StatusOK, map[string]int{"resumed": d.ResumeFile(id)})
}

// NodeClient's Daemon.

func (n NodeClient) ClientStatus() client.ClientStatus { return n.C.Status() }

func (n NodeClient) WaitIndex(ctx context.Context) error {
	_, err := n.C.WaitSyncedIndex(ctx)
	return err
}

func (n NodeClient) ResumeFile(id string) int { return n.C.Resume(id) }
