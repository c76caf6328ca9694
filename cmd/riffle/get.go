package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client"
)

// downloadsDir holds, inside the client data directory, one directory per
// file id being fetched: the partial file lives there between runs, and
// the chunker verifies and keeps what it holds when a get is resumed. A
// finished get leaves "<file id>.done" there: where it wrote the file and
// the file's hash, so that the same get run again says so and succeeds.
const downloadsDir = "downloads"

func init() {
	register(&cli.Command{
		Name:      "get",
		Usage:     "fetch files by link; resumable",
		ArgsUsage: "LINK...",
		Description: `Joins the next epoch through the primary, fetches each file's chunks by PIR
(up to k per round), verifies every chunk, and writes the file under its shared
name in the current directory, or at -o PATH (a directory when several links are
given). A shared folder (a ".rtree" archive) is unpacked as a folder of its name,
or at -o PATH: every path is checked before anything is written, and nothing is
written outside that folder. The destination is checked before anything is fetched, and an existing
file is never overwritten. An interrupted get resumes where it stopped: partial
files are kept in the client data directory (--data); a get run again after it
finished finds the file in place and says so. Prints each written path on stdout.

A link to a file that is not (yet) published waits; the progress says whether
the file is in the index the client synced. Once the index synced at the start
of --unlisted-epochs epochs (4) since the get began lacked the file, the get
gives up and asks to check the link; --timeout bounds any wait.

A job that has requested chunks in J epochs (8; lower it with --max-epochs)
pauses, sending cover only, and says so: "riffle resume" lets it go on for J more.`,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "file to write, or directory to write into"},
			&cli.BoolFlag{Name: "json", Usage: `print one JSON object a link on stdout: {"link", "path", "already"}`},
			&cli.IntFlag{Name: "unlisted-epochs", Value: client.DefaultUnlistedEpochs,
				Usage: "give up once the index synced at the start of N epochs since the get began lacked the file (0: wait until --timeout or Ctrl-C)"},
			maxEpochsFlag(), timeoutFlag()),
		Action: runGet,
	})
}

// getResult is a line of `riffle get --json`.
type getResult struct {
	Link    string `json:"link"`
	Path    string `json:"path"`
	Already bool   `json:"already"` // the file was there from an earlier get
}

// getter fetches a link into a directory: a client.Client's Get or the same
// job handed to a running client.
type getter func(ctx context.Context, link chunker.Link, dir string) (string, error)

// destination is where a get writes: a file path, or a directory to write
// the file into under its shared name.
type destination struct {
	path    string
	isDir   bool
	created bool        // the directory was made by checkDestination
	mode    os.FileMode // of written files: 0666 less the umask
	dirMode os.FileMode // of folders unpacked: 0777 less the umask
}

func runGet(c *cli.Context) (err error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return usagef("get needs at least one LINK")
	}
	jctx, err := withMaxEpochs(c.Context, c)
	if err != nil {
		return err
	}
	if n := c.Int("unlisted-epochs"); n < 0 || n > 255 {
		return usagef("--unlisted-epochs %d: give 0 to 255", n)
	}
	jctx = client.WithUnlistedEpochs(jctx, c.Int("unlisted-epochs"))
	links := make([]chunker.Link, len(args))
	seen := map[chunker.ID]int{}
	for i, a := range args {
		l, err := chunker.ParseLink(strings.TrimSpace(a))
		if err != nil {
			// The link itself is not echoed: it may carry a key.
			if !strings.Contains(err.Error(), "check the link") {
				err = fmt.Errorf("%w; check the link", err)
			}
			return fmt.Errorf("link %d: %w", i+1, err)
		}
		// The client keeps one download per file id: a repeated link
		// would wait for a job that the first one replaced.
		if j, dup := seen[l.ID]; dup {
			return fmt.Errorf("link %d names the same file as link %d", i+1, j+1)
		}
		seen[l.ID] = i
		links[i] = l
	}
	dst, err := checkDestination(c.String("output"), len(links))
	if err != nil {
		return err
	}
	if dst.created {
		// A directory made for this get goes again if the get failed
		// with nothing in it.
		defer func() {
			if err != nil {
				os.Remove(dst.path)
			}
		}()
	}
	data, err := clientDataDir(c)
	if err != nil {
		return err
	}
	paths := make([]string, len(links))
	already := make([]bool, len(links))
	todo := 0
	done := make([]bool, len(links))
	errs := make([]error, len(links))
	for i, l := range links {
		if p, ok := fetchedBefore(data, l, dst); ok {
			paths[i], already[i], done[i] = p, true, true
			continue
		}
		if !dst.isDir {
			if _, err := os.Lstat(dst.path); err == nil {
				return fmt.Errorf("-o %s already exists; remove it or give another -o (nothing was fetched)", dst.path)
			}
		}
		// A file fetched before whose move failed is moved without
		// fetching again.
		if got := finishedIn(filepath.Join(data, downloadsDir, l.ID.String())); got != "" {
			paths[i], already[i], errs[i] = place(got, l, data, dst)
			done[i] = true
			continue
		}
		todo++
	}
	p := newProgress(c)
	defer p.finish()
	ctx, stop := signalContext(jctx)
	defer stop()
	ctx, cancel := withTimeout(ctx, c)
	defer cancel()
	if todo > 0 {
		// A running client on this machine (same data directory) takes
		// the jobs; otherwise this command joins epochs on its own.
		var get getter
		lc, err := runningClient(ctx, c)
		if err != nil {
			return err
		}
		if lc != nil {
			get = func(ctx context.Context, l chunker.Link, dir string) (string, error) {
				return lc.Get(ctx, l, dir, maxEpochs(c), c.Int("unlisted-epochs"), p.event)
			}
		} else {
			if err := oneShot(c, "get"); err != nil {
				return err
			}
			cl, err := startClient(ctx, c, p)
			if err != nil {
				return err
			}
			defer cl.Close()
			warnNow(c, "get")
			get = func(ctx context.Context, l chunker.Link, dir string) (string, error) {
				return cl.Get(client.WithProgress(ctx, p.event), l, dir)
			}
		}
		// All links are asked for at once: the client requests up to k
		// chunks per round from whichever files still need them.
		var wg sync.WaitGroup
		for i, l := range links {
			if done[i] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				paths[i], already[i], errs[i] = fetchOne(ctx, get, l, data, dst)
			}()
		}
		wg.Wait()
		p.finish()
	}
	for i := range links {
		if errs[i] != nil {
			continue
		}
		if already[i] && !quiet(c) {
			fmt.Fprintf(stderr(c), "%s already holds this file (fetched before); nothing to do\n", paths[i])
		}
		if c.Bool("json") {
			b, _ := json.Marshal(getResult{Link: links[i].String(), Path: paths[i], Already: already[i]})
			fmt.Fprintln(stdout(c), string(b))
			continue
		}
		fmt.Fprintln(stdout(c), paths[i])
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		what := fmt.Sprintf("get link %d (%s)", i+1, links[i].ID)
		if ctx.Err() != nil && interrupt.Load() != 0 {
			return fmt.Errorf("%s: interrupted; partial download kept under %s, the same command resumes it", what, filepath.Join(data, downloadsDir))
		}
		if strings.Contains(err.Error(), client.ErrNotListed.Error()) {
			return fmt.Errorf("%s: %s: check the link (one wrong character names a file nobody shared); "+
				"if it was shared only just now, run get again after the next epoch, or give --unlisted-epochs N to wait longer", what, jobMessage(err))
		}
		return jobError(ctx, c, what, err, p)
	}
	return nil
}

// checkDestination checks -o before anything is fetched: a directory must
// exist and take new files; a file must not exist (unless an earlier get
// wrote it, which fetchedBefore finds) and its directory must take it.
// A path ending in a slash names a directory, made if missing, as cp and
// rsync take it.
func checkDestination(out string, nlinks int) (destination, error) {
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	d := destination{path: out, mode: 0o666 &^ os.FileMode(umask), dirMode: 0o777 &^ os.FileMode(umask)}
	st, statErr := os.Stat(out)
	switch {
	case out == "":
		d.path, d.isDir = ".", true
	case statErr == nil && st.IsDir():
		d.isDir = true
	case errors.Is(statErr, fs.ErrNotExist) && strings.HasSuffix(out, string(filepath.Separator)):
		if err := os.MkdirAll(out, 0o777); err != nil {
			return d, fmt.Errorf("-o %s: create the directory: %w (nothing was fetched)", out, errors.Unwrap(err))
		}
		d.isDir, d.created = true, true
	case nlinks > 1:
		return d, fmt.Errorf("-o %s: with %d links it must be a directory (end it with %c to have it created)", out, nlinks, filepath.Separator)
	case statErr == nil && !st.Mode().IsRegular():
		return d, fmt.Errorf("-o %s exists and is not a regular file", out)
	}
	dir := d.path
	if !d.isDir {
		dir = filepath.Dir(d.path)
		st, err := os.Stat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return d, fmt.Errorf("-o %s: directory %s does not exist (to write into a new directory, end -o with %c)", out, dir, filepath.Separator)
		}
		if err != nil {
			return d, fmt.Errorf("-o %s: directory %s: %w", out, dir, err)
		}
		if !st.IsDir() {
			return d, fmt.Errorf("-o %s: %s is not a directory", out, dir)
		}
	}
	// Writable: a probe file, removed at once (permission bits lie for
	// root and on some file systems).
	f, err := os.CreateTemp(dir, ".riffle-probe-*")
	if err != nil {
		return d, fmt.Errorf("cannot write into %s: %w (nothing was fetched)", dir, errors.Unwrap(err))
	}
	f.Close()
	os.Remove(f.Name())
	return d, nil
}

// doneRecord is a finished get's "<file id>.done" file.
type doneRecord struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 []byte `json:"sha256"`
	// Tree: Path is a folder unpacked from a tree archive, SHA256 the
	// archive's, which the folder as it stands must give again.
	Tree bool `json:"tree,omitempty"`
}

func donePath(data string, l chunker.Link) string {
	return filepath.Join(data, downloadsDir, l.ID.String()+".done")
}

// fetchedBefore reports whether an earlier get of l with this data
// directory wrote the file where this one would, and it still holds the
// same bytes.
func fetchedBefore(data string, l chunker.Link, dst destination) (string, bool) {
	b, err := os.ReadFile(donePath(data, l))
	if err != nil || len(b) > 64<<10 {
		return "", false
	}
	var rec doneRecord
	if json.Unmarshal(b, &rec) != nil {
		return "", false
	}
	want := dst.path
	if dst.isDir {
		want = filepath.Join(dst.path, filepath.Base(rec.Path))
	}
	if !sameFile(want, rec.Path) {
		return "", false
	}
	if rec.Tree {
		if sum, err := hashTree(want); err != nil || string(sum) != string(rec.SHA256) {
			return "", false
		}
		return want, true
	}
	if size, sum, err := hashFile(want); err != nil || size != rec.Size || string(sum) != string(rec.SHA256) {
		return "", false
	}
	return want, true
}

// sameFile reports whether paths a and b name the same file.
func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

func hashFile(path string) (int64, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return n, h.Sum(nil), err
}

// fetchOne downloads link into its staging directory, then moves the file
// to the destination, never over an existing file. A file that a failed
// move left in the staging directory is complete and verified: it is moved
// without fetching again.
func fetchOne(ctx context.Context, get getter, link chunker.Link, data string, dst destination) (string, bool, error) {
	stage := filepath.Join(data, downloadsDir, link.ID.String())
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return "", false, fmt.Errorf("create download directory: %w", err)
	}
	got, err := get(ctx, link, stage)
	if err != nil {
		return "", false, err
	}
	return place(got, link, data, dst)
}

// place moves a fetched file from its staging directory to the
// destination; it reports whether the destination held those bytes already.
func place(got string, link chunker.Link, data string, dst destination) (string, bool, error) {
	if strings.HasSuffix(got, chunker.TreeSuffix) && chunker.IsTree(got) {
		return placeTree(got, link, data, dst)
	}
	stage := filepath.Dir(got)
	target := dst.path
	if dst.isDir {
		target = filepath.Join(dst.path, filepath.Base(got))
	}
	if err := moveNoClobber(got, target); err != nil {
		if same, _ := sameContent(got, target); same {
			// The destination already holds these bytes.
			os.Remove(got)
			os.Remove(stage)
			recordDone(data, link, target)
			return target, true, nil
		}
		return "", false, fmt.Errorf("%w; the fetched file is kept at %s and the same command with another -o moves it there without fetching again", err, got)
	}
	_ = os.Chmod(target, dst.mode)
	os.Remove(stage) // only if empty: anything else is kept
	recordDone(data, link, target)
	return target, false, nil
}

// finishedIn returns a finished file in a staging directory ("" if none):
// any regular file that is not a working file of the chunker.
func finishedIn(stage string) string {
	ents, err := os.ReadDir(stage)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), chunker.PartSuffix) && !strings.HasPrefix(e.Name(), ".") && !strings.Contains(e.Name(), ".riffle-") {
			return filepath.Join(stage, e.Name())
		}
	}
	return ""
}

// recordDone writes the "<file id>.done" record of a finished get.
func recordDone(data string, link chunker.Link, path string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	size, sum, err := hashFile(abs)
	if err != nil {
		return
	}
	b, _ := json.Marshal(doneRecord{Path: abs, Size: size, SHA256: sum})
	_ = writeFileAtomic(donePath(data, link), b, 0o600)
}

// sameContent reports whether files a and b hold the same bytes.
func sameContent(a, b string) (bool, error) {
	na, ha, err := hashFile(a)
	if err != nil {
		return false, err
	}
	nb, hb, err := hashFile(b)
	if err != nil {
		return false, err
	}
	return na == nb && string(ha) == string(hb), nil
}

// moveNoClobber moves src to dst, failing if dst exists. A hard link is
// atomic and refuses an existing target; across file systems it copies.
func moveNoClobber(src, dst string) error {
	err := os.Link(src, dst)
	if err == nil {
		return os.Remove(src)
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists", dst)
	}
	if !errors.Is(err, syscall.EXDEV) {
		return fmt.Errorf("move to %s: %w", dst, err)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		os.Remove(dst)
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(dst)
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return os.Remove(src)
}

// hashTree is the SHA-256 of the archive the folder at path would be
// shared as.
func hashTree(path string) ([]byte, error) {
	h := sha256.New()
	if err := chunker.TreeDigest(path, h); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// placeTree unpacks a fetched folder archive at the destination: into a
// new hidden folder beside it (every path checked before anything is
// written, nothing written outside it: chunker.UnpackTree), then renamed
// into place, never over an existing one.
func placeTree(got string, link chunker.Link, data string, dst destination) (string, bool, error) {
	stage := filepath.Dir(got)
	target := dst.path
	if dst.isDir {
		target = filepath.Join(dst.path, strings.TrimSuffix(filepath.Base(got), chunker.TreeSuffix))
	}
	_, sum, err := hashFile(got)
	if err != nil {
		return "", false, err
	}
	kept := fmt.Sprintf("the fetched folder is kept at %s and the same command with another -o unpacks it there without fetching again", got)
	if _, err := os.Lstat(target); err == nil {
		if have, err := hashTree(target); err == nil && string(have) == string(sum) {
			os.Remove(got)
			os.Remove(stage)
			recordDoneTree(data, link, target, sum)
			return target, true, nil
		}
		return "", false, fmt.Errorf("%s already exists; %s", target, kept)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(target), ".riffle-folder-*")
	if err != nil {
		return "", false, fmt.Errorf("unpack the folder: %w; %s", err, kept)
	}
	f, err := os.Open(got)
	if err == nil {
		err = chunker.UnpackTree(bufio.NewReaderSize(f, 64<<10), tmp, dst.mode)
		f.Close()
	}
	if err == nil {
		err = os.Chmod(tmp, dst.dirMode)
	}
	if err == nil {
		// Checked again just before: rename(2) would replace an empty
		// folder made meanwhile.
		if _, lerr := os.Lstat(target); lerr == nil {
			err = fmt.Errorf("%s already exists", target)
		} else {
			err = os.Rename(tmp, target)
		}
	}
	if err != nil {
		os.RemoveAll(tmp) // made here, holding only what was unpacked
		return "", false, fmt.Errorf("unpack the folder: %w; %s", err, kept)
	}
	os.Remove(got)
	os.Remove(stage)
	recordDoneTree(data, link, target, sum)
	return target, false, nil
}

// recordDoneTree writes the "<file id>.done" record of a fetched folder.
func recordDoneTree(data string, link chunker.Link, path string, sum []byte) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	b, _ := json.Marshal(doneRecord{Path: abs, SHA256: sum, Tree: true})
	_ = writeFileAtomic(donePath(data, link), b, 0o600)
}
