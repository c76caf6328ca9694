package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

// runningClient returns the control socket of a `riffle client` running
// with this command's data directory, or "" if none runs: share, get and ls
// then hand their jobs to it instead of joining epochs on their own (one
// long-lived participant gives better cover than many short ones).
//
// A job runs only under the flags its user gave: if --server (or
// $RIFFLE_SERVER) names another primary, or a --require-server is not
// required by the running client, the job is refused with the reason.
func runningClient(ctx context.Context, c *cli.Context) (string, error) {
	dir, err := clientDataDir(c)
	if err != nil {
		return "", nil
	}
	sock := filepath.Join(dir, node.ControlSocket)
	if !node.ControlAvailable(sock) {
		return "", nil
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := node.ControlStatus(sctx, sock)
	if err != nil {
		return "", fmt.Errorf("a riffle client runs on data directory %s but does not answer: %w", dir, err)
	}
	var want peer.ID
	if c.String("server") != "" || strings.TrimSpace(os.Getenv(envServer)) != "" {
		s, err := primary(c)
		if err != nil {
			return "", err
		}
		a, _ := ma.NewMultiaddr(s)
		ai, _ := peer.AddrInfoFromP2pAddr(a)
		want = ai.ID
	}
	req, err := requiredServers(c)
	if err != nil {
		return "", err
	}
	err = node.CheckHandover(st, want, req, c.Int("min-anonymity"))
	if err == nil {
		err = node.CheckBudgetHandover(st, c.Bool("accept-budget-drops"))
	}
	if err != nil {
		return "", fmt.Errorf("%w: refusing to hand it this job; stop that client (it runs on data directory %s) or give this command another --data", err, dir)
	}
	if !quiet(c) {
		fmt.Fprintf(stderr(c), "handing the job to the riffle client running on %s\n", dir)
	}
	return sock, nil
}

// withStderrProgress has the progress lines of a job handed to a running
// client printed on this command's stderr, as if it ran here.
func withStderrProgress(ctx context.Context, c *cli.Context, p *progress) context.Context {
	return node.WithProgress(ctx, p.line)
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

// maxEpochsFlag lowers, for the jobs of one share or get, the epochs with
// real traffic a job may span before it pauses and asks its user
// (docs/protocol.md §5.4).
func maxEpochsFlag() cli.Flag {
	return &cli.IntFlag{Name: "max-epochs", Usage: fmt.Sprintf("pause each job after it sent real traffic in N epochs (1 to %d, the network's J; default J): a job spanning more epochs is linkable across them", node.JobEpochs)}
}

// withMaxEpochs checks --max-epochs and puts it in ctx for the jobs.
func withMaxEpochs(ctx context.Context, c *cli.Context) (context.Context, error) {
	if !c.IsSet("max-epochs") {
		return ctx, nil
	}
	n := c.Int("max-epochs")
	if n < 1 || n > node.JobEpochs {
		return ctx, usagef("--max-epochs %d: give 1 to %d (a job may not span more epochs than the network's J)", n, node.JobEpochs)
	}
	return node.WithMaxEpochs(ctx, n), nil
}
