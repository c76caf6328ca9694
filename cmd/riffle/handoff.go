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
