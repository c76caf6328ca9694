package webui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client"
)

// LocalClient is the other end of the local API: what `riffle share`,
// `get`, `ls`, `status` and `resume` use to hand their jobs to the client
// running on their data directory.
type LocalClient struct {
	hc *http.Client
}

// Bounds of what LocalClient reads.
const (
	maxEvent    = 64 << 10 // one event line
	maxReply    = 64 << 10 // a status, a job, an error
	maxIndex    = 64 << 20 // the index
	cancelGrace = 5 * time.Second
)

// ErrNoClient is returned when no client serves the socket.
var ErrNoClient = errors.New("no riffle client serves this data directory")

// DialLocal returns a client of the local API at sock. The socket must be
// the user's own, in a directory no one else may write: a socket another
// user put there would be handed the user's jobs.
func DialLocal(sock string) (*LocalClient, error) {
	st, err := os.Lstat(sock)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoClient
	}
	if err != nil {
		return nil, err
	}
	if st.Mode()&os.ModeSocket == 0 || !ownedByMe(st) {
		return nil, fmt.Errorf("webui: %s is not a socket of this user's: refusing to hand it a job", sock)
	}
	if err := privateDir(filepath.Dir(sock)); err != nil {
		return nil, err
	}
	if !Available(sock) {
		return nil, ErrNoClient
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true,
	}
	return &LocalClient{hc: &http.Client{Transport: tr}}, nil
}

// APIError is the local API's refusal of a request, or a job's failure.
type APIError struct {
	Code int // HTTP status; 0 for a job that failed
	Text string
}

func (e *APIError) Error() string { return e.Text }

// jobError is a job's failure after its asker cancelled it: the running
// client's word on what became of it, wrapping the cause.
type jobError struct {
	cause error
	text  string
}

func (e *jobError) Error() string {
	if e.text == "" {
		return e.cause.Error()
	}
	return e.text
}

func (e *jobError) Unwrap() error { return e.cause }

func (l *LocalClient) request(ctx context.Context, method, path string, form url.Values) (*http.Response, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://riffle"+path, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("running client: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		var e struct{ Error string }
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("running client: %s", resp.Status)
		}
		return nil, &APIError{Code: resp.StatusCode, Text: e.Error}
	}
	return resp, nil
}

// call makes a request and decodes its JSON reply of at most max bytes
// into v.
func (l *LocalClient) call(ctx context.Context, method, path string, form url.Values, max int64, v any) error {
	resp, err := l.request(ctx, method, path, form)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return fmt.Errorf("running client: %w", err)
	}
	if int64(len(b)) > max {
		return fmt.Errorf("running client: reply to %s over %d bytes", path, max)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("running client: reply to %s: %w", path, err)
	}
	return nil
}

// Status returns the running client's settings and state.
func (l *LocalClient) Status(ctx context.Context) (*client.ClientStatus, error) {
	var st client.ClientStatus
	if err := l.call(ctx, http.MethodGet, "/api/client", nil, maxReply, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Index returns the index as the running client synced it, once it has
// synced it.
func (l *LocalClient) Index(ctx context.Context) ([]FileView, error) {
	var r struct{ Files []FileView }
	if err := l.call(ctx, http.MethodGet, "/api/index?wait=1", nil, maxIndex, &r); err != nil {
		return nil, err
	}
	return r.Files, nil
}

// Resume resumes the paused jobs of file id ("" every one) and returns
// how many.
func (l *LocalClient) Resume(ctx context.Context, id string) (int, error) {
	var r struct{ Resumed int }
	err := l.call(ctx, http.MethodPost, "/api/resume", url.Values{"file": {id}}, maxReply, &r)
	return r.Resumed, err
}

// Share hands the share of the file or folder at path to the running
// client (maxEpochs 0: the network's J), passing its events to fn, and
// returns its link.
func (l *LocalClient) Share(ctx context.Context, path string, private bool, maxEpochs int, fn func(client.JobEvent)) (chunker.Link, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return chunker.Link{}, err
	}
	form := url.Values{"path": {abs}}
	if private {
		form.Set("private", "1")
	}
	if maxEpochs > 0 {
		form.Set("max_epochs", strconv.Itoa(maxEpochs))
	}
	last, err := l.job(ctx, "/api/share", form, fn)
	if err != nil {
		return chunker.Link{}, err
	}
	return chunker.ParseLink(last.Link)
}

// Get hands the get of link into dir to the running client (unlisted 0:
// no bound on epochs whose index lacks the file) and returns the file's
// path.
func (l *LocalClient) Get(ctx context.Context, link chunker.Link, dir string, maxEpochs, unlisted int, fn func(client.JobEvent)) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	form := url.Values{"link": {link.String()}, "dir": {abs}, "unlisted_epochs": {strconv.Itoa(unlisted)}}
	if maxEpochs > 0 {
		form.Set("max_epochs", strconv.Itoa(maxEpochs))
	}
	last, err := l.job(ctx, "/api/get", form, fn)
	if err != nil {
		return "", err
	}
	if last.Path == "" {
		return "", errors.New("running client: a get done without a path")
	}
	return last.Path, nil
}

// job starts a job with stream=1 and follows its events to its end. When
// ctx ends first the stream is closed, which cancels the job, and the
// running client's word on what became of it is read for a few seconds.
func (l *LocalClient) job(ctx context.Context, path string, form url.Values, fn func(client.JobEvent)) (client.JobEvent, error) {
	form.Set("stream", "1")
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer rcancel()
	stop := context.AfterFunc(ctx, rcancel)
	defer stop()
	resp, err := l.request(rctx, http.MethodPost, path, form)
	if err != nil {
		if ctx.Err() != nil {
			return client.JobEvent{}, &jobError{cause: ctx.Err()}
		}
		return client.JobEvent{}, err
	}
	defer resp.Body.Close()
	var id string
	var last *client.JobEvent
	err = DecodeEvents(resp.Body, func(e client.JobEvent) error {
		switch e.Phase {
		case client.PhaseStarted:
			id = e.Job
		case client.PhaseDone:
			last = &e
			return io.EOF
		case client.PhaseFailed:
			return &APIError{Text: e.Error}
		default:
			if fn != nil {
				fn(e)
			}
		}
		return nil
	})
	var failed *APIError
	switch {
	case last != nil:
		return *last, nil
	case errors.As(err, &failed) && ctx.Err() != nil:
		return client.JobEvent{}, &jobError{cause: ctx.Err(), text: failed.Text}
	case ctx.Err() != nil:
		text := ""
		if id != "" {
			text = l.jobEnd(id)
		}
		return client.JobEvent{}, &jobError{cause: ctx.Err(), text: text}
	case err != nil:
		return client.JobEvent{}, err
	}
	return client.JobEvent{}, errors.New("running client: the job's stream ended before the job (the client stopped?)")
}

// jobEnd waits up to cancelGrace for cancelled job id to end and returns
// its error.
func (l *LocalClient) jobEnd(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
	defer cancel()
	for {
		var v JobView
		if err := l.call(ctx, http.MethodGet, "/api/jobs/"+url.PathEscape(id), nil, maxReply, &v); err != nil {
			return ""
		}
		if v.State != stateRunning {
			return v.Error
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// DecodeEvents reads a stream of job events, one JSON object a line of at
// most maxEvent bytes, passing each to fn until fn returns an error (which
// DecodeEvents returns) or the stream ends (nil).
func DecodeEvents(r io.Reader, fn func(client.JobEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxEvent)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e client.JobEvent
		d := json.NewDecoder(bytes.NewReader(line))
		if err := d.Decode(&e); err != nil {
			return fmt.Errorf("running client: bad event: %w", err)
		}
		if d.More() {
			return errors.New("running client: bad event: more than one object on a line")
		}
		if e.Phase == "" {
			return errors.New("running client: bad event: no phase")
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("running client: events: %w", err)
	}
	return nil
}
