package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client"
)

func init() {
	register(&cli.Command{
		Name:      "share",
		Usage:     "share files and folders anonymously; prints one link per argument",
		ArgsUsage: "FILE|FOLDER...",
		Description: `Joins the next epoch through the primary server, uploads each file's chunks
and manifest one per round, waits until every chunk is in a published list, then
prints the file's link (riffle:...) on stdout. Progress goes to stderr. With
--encrypt the file is encrypted under a fresh key that only the link carries.

A folder is shared as one link: its files and folders (empty ones too), as a
tree archive named after it with ".rtree" ("riffle get" unpacks it). Names are
cleaned as a file's name is; two that clean to one name are refused, as is a
tree of more than 65536 entries or 32 levels. Symbolic links and special files
(devices, sockets, pipes) are skipped with a warning naming them: a link is
never followed, in or out of the folder.

An epoch opens only when the primary's chain has its servers and at least its
--min-clients clients (2 by default): besides this command, another client (a
"riffle client" with a data directory of its own) must take part.

Interrupted (Ctrl-C, --timeout), share withdraws what it has not sent and says
whether the file will be published anyway (its manifest already went out). Run
again with the same data directory after any interruption (a crash too), it
resumes: only the chunks that did not go out are sent.

A job that has sent chunks in J epochs (8; lower it with --max-epochs) pauses,
sending cover only, and says so: "riffle resume" lets it go on for J more.`,
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "encrypt", Usage: "share privately: the link carries the decryption key"},
			&cli.BoolFlag{Name: "json", Usage: `print one JSON object a file on stdout: {"file", "link"}`},
			maxEpochsFlag(), timeoutFlag()),
		Action: runShare,
	})
}

// shareResult is a line of `riffle share --json`.
type shareResult struct {
	File string `json:"file"`
	Link string `json:"link"`
}

func runShare(c *cli.Context) error {
	files := c.Args().Slice()
	if len(files) == 0 {
		return usagef("share needs at least one FILE")
	}
	// Check every file and flag before joining: a typo must not cost an
	// epoch.
	ctx, err := withMaxEpochs(c.Context, c)
	if err != nil {
		return err
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("share: %w", err)
		}
		switch {
		case st.IsDir():
			// The whole tree is checked now: a name clash or a tree past
			// the bounds must not cost an epoch either.
			t, err := chunker.WalkTree(f)
			if err != nil {
				return fmt.Errorf("share: %w", err)
			}
			for _, s := range t.Skipped {
				fmt.Fprintf(stderr(c), "warning: share %s: skipping %s (a symbolic link or special file: never followed, not shared)\n", printable(f), printable(s))
			}
		case !st.Mode().IsRegular():
			return fmt.Errorf("share: %s is neither a regular file nor a folder", f)
		}
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	ctx, cancel := withTimeout(ctx, c)
	defer cancel()
	p := newProgress(c)
	defer p.finish()
	var share func(ctx context.Context, name string) (chunker.Link, error)
	lc, err := runningClient(ctx, c)
	if err != nil {
		return err
	}
	if lc != nil {
		share = func(ctx context.Context, name string) (chunker.Link, error) {
			return lc.Share(ctx, name, c.Bool("encrypt"), maxEpochs(c), p.event)
		}
	} else {
		if err := oneShot(c, "share"); err != nil {
			return err
		}
		cl, err := startClient(ctx, c, p)
		if err != nil {
			return err
		}
		defer cl.Close()
		warnNow(c, "share")
		share = func(ctx context.Context, path string) (chunker.Link, error) {
			f, name, _, err := chunker.OpenShare(path)
			if err != nil {
				return chunker.Link{}, err
			}
			defer f.Close()
			return cl.Share(client.WithProgress(ctx, p.event), f, name, c.Bool("encrypt"))
		}
	}
	for _, name := range files {
		link, err := share(ctx, name)
		p.finish()
		if err != nil {
			return jobError(ctx, c, "share "+printable(name), err, p)
		}
		if c.Bool("json") {
			b, _ := json.Marshal(shareResult{File: name, Link: link.String()})
			fmt.Fprintln(stdout(c), string(b))
			continue
		}
		fmt.Fprintln(stdout(c), link.String())
	}
	return nil
}
