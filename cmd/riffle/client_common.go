package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

// startClient joins the network through the primary that --server,
// $RIFFLE_SERVER or the config file names. Progress lines (epochs,
// anonymity set, rounds, rates) go to stderr; stdout stays for results.
func startClient(ctx context.Context, c *cli.Context) (*node.Client, error) {
	return startClientProgress(ctx, c, stderr(c))
}

// startClientProgress is startClient with progress lines sent to w (nil:
// none, for commands whose output is only their result).
func startClientProgress(ctx context.Context, c *cli.Context, w io.Writer) (*node.Client, error) {
	srv, err := primary(c)
	if err != nil {
		return nil, err
	}
	req, err := requiredServers(c)
	if err != nil {
		return nil, err
	}
	// The data directory keeps the sealed onions (stored before they are
	// sent, resent after a crash); without one they stay in memory.
	data, _ := clientDataDir(c)
	cl, err := node.NewClient(ctx, node.ClientConfig{Server: srv, Require: req, DataDir: data, Logger: logger(c), Progress: w,
		MinAnonymity: c.Int("min-anonymity"), Now: c.Bool("now")})
	if err != nil {
		return nil, fmt.Errorf("join through %s: %w", srv, err)
	}
	return cl, nil
}
