package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

func init() {
	register(&cli.Command{
		Name:      "share",
		Usage:     "share files anonymously; prints one link per file",
		ArgsUsage: "FILE...",
		Description: `Joins the next epoch through the primary server, uploads each file's chunks
and manifest one per round, waits until every chunk is in a published list, then
prints the file's link (riffle:...) on stdout. Progress goes to stderr. With
--encrypt the file is encrypted under a fresh key that only the link carries.`,
		Flags:  append(clientFlags(), &cli.BoolFlag{Name: "encrypt", Usage: "share privately: the link carries the decryption key"}),
		Action: runShare,
	})
}

func runShare(c *cli.Context) error {
	files := c.Args().Slice()
	if len(files) == 0 {
		return errors.New("share needs at least one FILE")
	}
	// Check every file before joining: a typo must not cost an epoch.
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("share: %w", err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("share: %s is not a regular file", f)
		}
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	if sock := runningClient(c); sock != "" {
		for _, name := range files {
			link, err := node.ControlShare(withStderrProgress(ctx, c), sock, name, c.Bool("encrypt"))
			if err != nil {
				return fmt.Errorf("share %s: %w", name, err)
			}
			fmt.Fprintln(stdout(c), link.String())
		}
		return nil
	}
	if err := oneShot(c, "share"); err != nil {
		return err
	}
	cl, err := startClient(ctx, c)
	if err != nil {
		return err
	}
	defer cl.Close()
	warnNow(c, "share")
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("share: %w", err)
		}
		link, err := cl.Share(ctx, f, filepath.Base(name), c.Bool("encrypt"))
		f.Close()
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return fmt.Errorf("share %s: interrupted before every chunk was published; no link", name)
			}
			return fmt.Errorf("share %s: %w", name, err)
		}
		fmt.Fprintln(stdout(c), link.String())
	}
	return nil
}
