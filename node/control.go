package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
)

// The control socket lets `riffle share`, `get` and `ls` hand their jobs to
// a running `riffle client` on the same machine instead of joining epochs on
// their own: one long-running participant is better cover than many
// short-lived ones. It is a Unix socket in the client's data directory,
// mode 0600 in a 0700 directory, so only its user can reach it. One request
// frame per connection; then, for a share or get, progress frames; then one
// reply frame (or a TypeError refusal).
const (
	ControlSocket = "control.sock"

	ctlShare wire.Type = 100 // u8 encrypt ‖ bytes absolute file path ‖ u8 max epochs
	ctlGet   wire.Type = 101 // bytes link ‖ bytes absolute directory ‖ u8 max epochs [‖ u8 unlisted epochs]
	ctlIndex wire.Type = 102 // empty
	ctlOK    wire.Type = 110 // bytes result: a link, a path, or an Index
	// ctlProgress frames (a UTF-8 line of the job's progress, at most
	// maxProgress bytes) may precede the reply of a share or get.
	ctlProgress wire.Type = 111
	maxProgress int       = 1024
	maxPath     int       = 4096
	maxLink     int       = 512
)

// ServeControl serves the control socket at path until ctx ends.
func (c *Client) ServeControl(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("node: control directory: %w", err)
	}
	// A socket left by a dead daemon is removed; a live one refuses us.
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return fmt.Errorf("node: a client already serves %s", path)
	}
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("node: control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("node: control socket mode: %w", err)
	}
	go func() {
		<-ctx.Done()
		l.Close()
		os.Remove(path)
	}()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("node: control accept: %w", err)
		}
		go c.serveControlConn(ctx, conn)
	}
}

func (c *Client) serveControlConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(shortTimeout))
	br := bufio.NewReader(conn)
	t, body, err := wire.ReadAny(br, func(t wire.Type) int {
		switch t {
		case ctlShare, ctlGet, ctlIndex, ctlStatus, ctlResume:
			return 2 * (maxPath + maxLink)
		}
		return 0
	})
	if err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	// The asker sends nothing after its request: its end of the stream
	// (Ctrl-C, a killed process) cancels the job.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		var b [1]byte
		_, _ = br.Read(b[:])
		cancel()
	}()
	// The job's progress goes to the command that asked for it. A slow or
	// gone reader only loses lines: each write has a short deadline.
	var mu sync.Mutex
	ctx = WithProgress(ctx, func(line string) {
		if len(line) > maxProgress {
			line = line[:maxProgress]
		}
		mu.Lock()
		defer mu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_ = wire.WriteFrame(conn, ctlProgress, []byte(line))
	})
	res, err := c.control(ctx, t, body)
	mu.Lock()
	defer mu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(shortTimeout))
	if err != nil {
		_ = wire.WriteError(conn, err)
		return
	}
	_ = wire.WriteFrame(conn, ctlOK, res)
}

func (c *Client) control(ctx context.Context, t wire.Type, body []byte) ([]byte, error) {
	switch t {
	case ctlShare:
		path, encrypt, maxEp, err := parseCtlShare(body)
		if err != nil {
			return nil, err
		}
		if !filepath.IsAbs(path) {
			return nil, errors.New("node: control share needs an absolute path")
		}
		// A folder goes as its tree archive (the command that asked said
		// what it skips).
		f, name, _, err := chunker.OpenShare(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		link, err := c.Share(WithMaxEpochs(ctx, maxEp), f, name, encrypt)
		if err != nil {
			return nil, err
		}
		return []byte(link.String()), nil
	case ctlGet:
		link, dir, maxEp, unlisted, err := parseCtlGet(body)
		if err != nil {
			return nil, err
		}
		ctx = WithUnlistedEpochs(WithMaxEpochs(ctx, maxEp), unlisted)
		if !filepath.IsAbs(dir) {
			return nil, errors.New("node: control get needs an absolute directory")
		}
		path, err := c.Get(ctx, link, dir)
		if err != nil {
			return nil, err
		}
		return []byte(path), nil
	case ctlIndex:
		if len(body) != 0 {
			return nil, errors.New("node: control index request has a body")
		}
		// §7: ls reads the synced copy, never a request of its own
		// (which would tell the primary when this user looks).
		idx, err := c.WaitSyncedIndex(ctx)
		if err != nil {
			return nil, err
		}
		return (&wire.Index{Entries: indexToWire(idx)}).Marshal(), nil
	}
	return c.controlMore(ctx, t, body)
}

// encCtlShare and parseCtlShare: u8 encrypt (0 or 1) ‖ bytes path ‖ u8
// max epochs (0: J; at most JobEpochs).
func encCtlShare(path string, encrypt bool, maxEpochs int) []byte {
	var e wire.Enc
	if encrypt {
		e.U8(1)
	} else {
		e.U8(0)
	}
	e.Bytes([]byte(path))
	e.U8(uint8(maxEpochs))
	return e.B
}

func parseCtlShare(b []byte) (string, bool, int, error) {
	d := wire.Dec{B: b}
	enc := d.U8("encrypt flag")
	path := string(d.Bytes(maxPath, "path"))
	maxEp := d.U8("max epochs")
	if err := d.Done("control share"); err != nil {
		return "", false, 0, err
	}
	if enc > 1 {
		return "", false, 0, fmt.Errorf("node: control share: encrypt flag %d", enc)
	}
	if maxEp > JobEpochs {
		return "", false, 0, fmt.Errorf("node: control share: max epochs %d above %d", maxEp, JobEpochs)
	}
	return path, enc == 1, int(maxEp), nil
}

// encCtlGet and parseCtlGet: bytes link ‖ bytes directory ‖ u8 max
// epochs ‖ u8 unlisted epochs (unlisted.go), absent when it is
// DefaultUnlistedEpochs. The link goes without checksums, which a client
// from before them reads too; it was checked when parsed.
func encCtlGet(link chunker.Link, dir string, maxEpochs, unlisted int) []byte {
	text := chunker.LinkScheme + link.ID.String()
	if link.Key != nil {
		text += "#" + link.Key.String()
	}
	var e wire.Enc
	e.Bytes([]byte(text))
	e.Bytes([]byte(dir))
	e.U8(uint8(maxEpochs))
	if unlisted != DefaultUnlistedEpochs {
		e.U8(uint8(unlisted))
	}
	return e.B
}

func parseCtlGet(b []byte) (chunker.Link, string, int, int, error) {
	d := wire.Dec{B: b}
	ls := string(d.Bytes(maxLink, "link"))
	dir := string(d.Bytes(maxPath, "directory"))
	maxEp := d.U8("max epochs")
	unlisted := DefaultUnlistedEpochs
	if d.Err == nil && len(d.B) > 0 {
		unlisted = int(d.U8("unlisted epochs"))
	}
	if err := d.Done("control get"); err != nil {
		return chunker.Link{}, "", 0, 0, err
	}
	if maxEp > JobEpochs {
		return chunker.Link{}, "", 0, 0, fmt.Errorf("node: control get: max epochs %d above %d", maxEp, JobEpochs)
	}
	link, err := chunker.ParseLink(ls)
	return link, dir, int(maxEp), unlisted, err
}

func controlCall(ctx context.Context, sock string, t wire.Type, body []byte, max int) ([]byte, error) {
	var dl net.Dialer
	conn, err := dl.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// On cancel the asker closes its writing half: the running client
	// cancels the job and says what became of it, which is read for a few
	// seconds more.
	stop := context.AfterFunc(ctx, func() {
		if uc, ok := conn.(*net.UnixConn); ok && uc.CloseWrite() == nil {
			_ = conn.SetReadDeadline(time.Now().Add(cancelGrace))
			return
		}
		conn.Close()
	})
	defer stop()
	// One write for the whole frame: the server may answer and close as
	// soon as it has the request.
	bw := bufio.NewWriter(conn)
	if err := wire.WriteFrame(bw, t, body); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	br := bufio.NewReader(conn)
	progress := progressOf(ctx)
	for {
		t, body, err := wire.ReadAny(br, func(t wire.Type) int {
			switch t {
			case ctlOK:
				return max
			case ctlProgress:
				return maxProgress
			case wire.TypeError:
				return wire.MaxErrorText
			}
			return 0
		})
		if err != nil {
			return nil, err
		}
		switch t {
		case ctlProgress:
			if progress != nil {
				progress(string(body))
			}
		case wire.TypeError:
			return nil, &wire.RemoteError{Text: string(body)}
		default:
			return body, nil
		}
	}
}

// ControlAvailable reports whether a running client serves sock.
func ControlAvailable(sock string) bool {
	conn, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// ControlShare asks the client serving sock to share the file at path.
func ControlShare(ctx context.Context, sock, path string, encrypt bool) (chunker.Link, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return chunker.Link{}, err
	}
	rep, err := controlCall(ctx, sock, ctlShare, encCtlShare(abs, encrypt, maxEpochsOf(ctx)), maxLink)
	if err != nil {
		return chunker.Link{}, fmt.Errorf("node: running client: %w", err)
	}
	return chunker.ParseLink(string(rep))
}

// ControlGet asks the client serving sock to fetch link into dir, under
// the bound of WithUnlistedEpochs in ctx (none if ctx has none).
func ControlGet(ctx context.Context, sock string, link chunker.Link, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	unlisted, bounded := unlistedEpochsOf(ctx)
	if !bounded {
		unlisted = 0
	}
	rep, err := controlCall(ctx, sock, ctlGet, encCtlGet(link, abs, maxEpochsOf(ctx), unlisted), maxPath)
	if err != nil {
		return "", fmt.Errorf("node: running client: %w", err)
	}
	return string(rep), nil
}

// ControlIndex asks the client serving sock for the public index.
func ControlIndex(ctx context.Context, sock string) ([]IndexEntry, error) {
	rep, err := controlCall(ctx, sock, ctlIndex, nil, 256<<20)
	if err != nil {
		return nil, fmt.Errorf("node: running client: %w", err)
	}
	var idx wire.Index
	if err := idx.Unmarshal(rep, 1<<20); err != nil {
		return nil, err
	}
	return indexFromWire(idx.Entries), nil
}
