package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

// runningClient returns the control socket of a `riffle client` running
// with this command's data directory, or "" if none runs: share, get and ls
// then hand their jobs to it instead of joining epochs on their own (one
// long-lived participant gives better cover than many short ones).
func runningClient(c *cli.Context) string {
	dir, err := clientDataDir(c)
	if err != nil {
		return ""
	}
	sock := filepath.Join(dir, node.ControlSocket)
	if !node.ControlAvailable(sock) {
		return ""
	}
	fmt.Fprintf(stderr(c), "using the running riffle client (%s)\n", sock)
	return sock
}

// withStderrProgress has the progress lines of a job handed to a running
// client printed on this command's stderr, as if it ran here.
func withStderrProgress(ctx context.Context, c *cli.Context) context.Context {
	w := stderr(c)
	return node.WithProgress(ctx, func(line string) { fmt.Fprintln(w, line) })
}

// oneShot allows a command to join the network for its own job only with
// --now (docs/protocol.md §5.4): a client present only for its job dates
// the job, and through the published ids the file.
func oneShot(c *cli.Context, what string) error {
	if !c.Bool("now") {
		return fmt.Errorf("no riffle client runs with this data directory: a one-shot %s joins the network only for its job, "+
			"which tells anyone watching who is online when the job ran; start `riffle client` (same --data) and run %s again, or pass --now", what, what)
	}
	return nil
}

// warnNow says what a one-shot command's --now reveals, once it joined.
func warnNow(c *cli.Context, what string) {
	fmt.Fprintf(stderr(c), "warning: --now: this %s joins the network for its job alone and leaves when it is done; "+
		"whoever watches who is online can tell when it ran and tie it to the files published or fetched then\n", what)
}
