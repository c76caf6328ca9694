package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node"
)

// downloadsDir holds, inside the client data directory, one directory per
// file id being fetched: the partial file lives there between runs, and
// the chunker verifies and keeps what it holds when a get is resumed.
const downloadsDir = "downloads"

func init() {
	register(&cli.Command{
		Name:      "get",
		Usage:     "fetch files by link; resumable",
		ArgsUsage: "LINK...",
		Description: `Joins the next epoch through the primary, fetches each file's chunks by PIR
(up to k per round), verifies every chunk, and writes the file under its shared
name in the current directory, or at -o PATH (a directory when several links are
given). An interrupted get resumes where it stopped: partial files are kept in
the client data directory (--data). Prints each written path on stdout.`,
		Flags:  append(clientFlags(), &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "file to write, or directory to write into"}),
		Action: runGet,
	})
}

func runGet(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return errors.New("get needs at least one LINK")
	}
	links := make([]chunker.Link, len(args))
	seen := map[chunker.ID]int{}
	for i, a := range args {
		l, err := chunker.ParseLink(a)
		if err != nil {
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
	out := c.String("output")
	outIsDir := out == "" || len(links) > 1
	if st, err := os.Stat(out); out != "" && err == nil && st.IsDir() {
		outIsDir = true
	}
	if out == "" {
		out = "."
	}
	if outIsDir {
		if st, err := os.Stat(out); err != nil || !st.IsDir() {
			return fmt.Errorf("-o %s: with %d links it must be an existing directory", out, len(links))
		}
	}
	data, err := clientDataDir(c)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	// A running client on this machine (same data directory) takes the
	// jobs; otherwise this command joins epochs on its own.
	var get getter
	if sock := runningClient(c); sock != "" {
		get = func(ctx context.Context, l chunker.Link, dir string) (string, error) {
			return node.ControlGet(withStderrProgress(ctx, c), sock, l, dir)
		}
	} else {
		if err := oneShot(c, "get"); err != nil {
			return err
		}
		cl, err := startClient(ctx, c)
		if err != nil {
			return err
		}
		defer cl.Close()
		warnNow(c, "get")
		get = cl.Get
	}

	// All links are asked for at once: the client requests up to k chunks
	// per round from whichever files still need them.
	paths := make([]string, len(links))
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = fetchOne(ctx, get, l, filepath.Join(data, downloadsDir, l.ID.String()), out, outIsDir)
		}()
	}
	wg.Wait()
	for i := range links {
		if errs[i] != nil {
			continue
		}
		fmt.Fprintln(stdout(c), paths[i])
	}
	for i, err := range errs {
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				// Interrupted: say how to continue rather than "context canceled".
				return fmt.Errorf("get %s: interrupted; partial download kept under %s, the same command resumes it", args[i], filepath.Join(data, downloadsDir))
			}
			return fmt.Errorf("get %s: %w", args[i], err)
		}
	}
	return nil
}

// fetchOne downloads link into its staging directory, then moves the file
// to out (into it when outIsDir), never over an existing file.
// getter fetches a link into a directory: a node.Client's Get or the same
// job handed to a running client.
type getter func(ctx context.Context, link chunker.Link, dir string) (string, error)

func fetchOne(ctx context.Context, get getter, link chunker.Link, stage, out string, outIsDir bool) (string, error) {
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return "", fmt.Errorf("create download directory: %w", err)
	}
	got, err := get(ctx, link, stage)
	if err != nil {
		return "", err
	}
	dst := out
	if outIsDir {
		dst = filepath.Join(out, filepath.Base(got))
	}
	if err := moveNoClobber(got, dst); err != nil {
		return "", fmt.Errorf("downloaded to %s: %w", got, err)
	}
	os.Remove(stage) // only if empty: anything else is kept
	return dst, nil
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
