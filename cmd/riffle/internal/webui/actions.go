package webui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client"
)

// Get and share: the forms, the uploads and their bounds.

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
		ShareDirs []string
	}{u.jobs.list("share"), humanBytes(uint64(u.opts.MaxUpload)), u.shareDirs}})
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
	o, code, err := jobOptions(r)
	if err != nil {
		httpError(w, r, code, "%v", err)
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
		if o.stream {
			httpError(w, r, http.StatusConflict, "a get of this file runs already (job %s)", v.ID)
			return
		}
		respondJob(w, r, v)
		return
	}
	dir := u.opts.DownloadDir
	if o.dir != "" {
		dir = o.dir
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		httpError(w, r, http.StatusInternalServerError, "download directory: %v", err)
		return
	}
	ctx, cancel := context.WithCancel(u.ctx)
	j := &job{ID: newJobID(), Kind: "get", Name: link.ID.String(), Link: link.String(), Private: link.Key != nil,
		State: stateRunning, Started: u.opts.Now(), fileID: link.ID, cancel: cancel, outside: o.dir != ""}
	for _, f := range u.c.Index() {
		if f.ID == link.ID {
			j.Name, j.size = display(f.Name), f.Size
		}
	}
	fl := newFollower(j, o.stream)
	ctx = o.context(ctx, fl.emit)
	u.jobs.add(j)
	u.running.Add(1)
	go func() {
		defer u.running.Done()
		defer cancel()
		path, err := u.c.Get(ctx, link, dir, func(p Progress) {
			u.jobs.update(j.ID, func(j *job) {
				// The rate counts from the get's first figures, not from
				// a wait for an epoch before the client held the job.
				if p.Total > 0 || j.Total > 0 {
					j.observe(u.opts.Now(), p.Done, p.Total)
				}
				j.Paused, j.Waiting = p.Paused, p.Waiting
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
		fl.end(err, client.JobEvent{Path: path, Name: filepath.Base(path)})
	}()
	if o.stream {
		fl.follow(w, r, cancel)
		return
	}
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
		o, code, err := jobOptions(r)
		if err != nil {
			httpError(w, r, code, "%v", err)
			return
		}
		u.sharePath(w, r, r.PostForm.Get("path"), formBool(r.PostForm.Get("private")), o)
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
			u.shareStream(w, r, &capReader{r: part, left: u.opts.MaxUpload, max: u.opts.MaxUpload}, part.FileName(), private, jobOpts{})
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
	u.sharePath(w, r, path, private, jobOpts{})
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
// share` hands it to a running client), only under a directory the user
// allowed (Options.ShareDirs) and never from the data directory: anyone
// with the token, from afar with --ui-public, could otherwise publish any
// file the client can read, its own ui.token included.
func (u *UI) sharePath(w http.ResponseWriter, r *http.Request, path string, private bool, o jobOpts) {
	if path == "" {
		httpError(w, r, http.StatusBadRequest, "choose a file or give a path")
		return
	}
	if local(r) {
		u.shareLocal(w, r, path, private, o)
		return
	}
	if len(u.shareDirs) == 0 {
		httpError(w, r, http.StatusForbidden, "sharing by path is off: upload the file, or start the client with --share-dir DIR to allow paths under DIR")
		return
	}
	if !filepath.IsAbs(path) {
		httpError(w, r, http.StatusBadRequest, "path %q is not absolute", path)
		return
	}
	// Symlinks are resolved first: a link inside an allowed directory
	// must not reach a file outside it.
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "open: %v", err)
		return
	}
	if err := u.pathAllowed(real); err != nil {
		httpError(w, r, http.StatusForbidden, "%s: %v", path, err)
		return
	}
	f, err := os.Open(real)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "open: %v", err)
		return
	}
	// The file opened must be the one checked (a link swapped in between
	// would not be).
	st, err := f.Stat()
	if lst, lerr := os.Lstat(real); err != nil || lerr != nil || !os.SameFile(st, lst) || !st.Mode().IsRegular() {
		f.Close()
		httpError(w, r, http.StatusBadRequest, "%s is not a regular file", path)
		return
	}
	u.shareStream(w, r, f, filepath.Base(path), private, o)
	f.Close()
}

// shareLocal shares a file or folder (its tree archive) by its absolute
// path for a request over the local socket, which only the user's own
// processes reach: `riffle share` hands its files over so.
func (u *UI) shareLocal(w http.ResponseWriter, r *http.Request, path string, private bool, o jobOpts) {
	if !filepath.IsAbs(path) {
		httpError(w, r, http.StatusBadRequest, "path %q is not absolute", path)
		return
	}
	f, name, _, err := chunker.OpenShare(path)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "open: %v", err)
		return
	}
	defer f.Close()
	u.shareStream(w, r, f, name, private, o)
}

// pathAllowed says why a resolved path may not be shared, if it may not.
func (u *UI) pathAllowed(real string) error {
	if u.dataDir != "" && within(real, u.dataDir) {
		return errors.New("is in the client's data directory, whose files are never shared")
	}
	for _, d := range u.shareDirs {
		if within(real, d) {
			return nil
		}
	}
	return fmt.Errorf("is not under a directory allowed with --share-dir (%s)", strings.Join(u.shareDirs, ", "))
}

// within reports whether path is dir or under it; both are resolved and
// clean.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveDirs resolves the allowed directories once: a missing one is an
// error at start, not a refusal later.
func resolveDirs(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("webui: share directory %q: %w", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("webui: share directory %q: %w", d, err)
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("webui: share directory %q is not a directory", d)
		}
		out = append(out, real)
	}
	return out, nil
}

// shareStream starts a share of rd and answers once the client has read
// and queued it (or refused it: then no job is left behind).
func (u *UI) shareStream(w http.ResponseWriter, r *http.Request, rd io.Reader, name string, private bool, o jobOpts) {
	ctx, cancel := context.WithCancel(u.ctx)
	j := &job{ID: newJobID(), Kind: "share", Name: display(filepath.Base(name)), Private: private, State: stateRunning, Started: u.opts.Now(), cancel: cancel}
	fl := newFollower(j, o.stream)
	ctx = o.context(ctx, fl.emit)
	u.jobs.add(j)
	queued := make(chan struct{})
	ended := make(chan error, 1)
	// The client reads the whole file before it reports it queued: then
	// the count is the file's size.
	cr := &countReader{r: rd}
	rd = cr
	u.running.Add(1)
	go func() {
		defer u.running.Done()
		defer cancel()
		first := true
		link, err := u.c.Share(ctx, rd, name, private, func(p Progress) {
			u.jobs.update(j.ID, func(j *job) {
				if j.size == 0 {
					j.size = uint64(cr.n.Load())
				}
				j.observe(u.opts.Now(), p.Done, p.Total)
				j.Paused, j.Waiting = p.Paused, p.Waiting
				if p.File != (chunker.ID{}) {
					j.resumeID = p.File
				}
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
		fl.end(err, client.JobEvent{Link: link.String(), Name: name})
		ended <- err
	}()
	if o.stream {
		// The follower reads what the job waits for before it is
		// queued, and its end.
		fl.follow(w, r, cancel)
		return
	}
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

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
