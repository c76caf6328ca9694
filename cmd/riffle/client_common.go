package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node/client"
)

// startClient joins the network through the primary that --server,
// $RIFFLE_SERVER or the config file names. Progress lines (epochs,
// anonymity set, rounds, rates) go to stderr; stdout stays for results.
func startClient(ctx context.Context, c *cli.Context, p *progress) (*client.Client, error) {
	return startClientProgress(ctx, c, p)
}

// startClientProgress is startClient with progress lines sent to w (nil:
// none, for commands whose output is only their result).
func startClientProgress(ctx context.Context, c *cli.Context, w io.Writer) (*client.Client, error) {

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
	rate, err := parseRate(c.String("max-rate"))
	if err != nil {
		return nil, fmt.Errorf("--max-rate: %w", err)
	}
	cl, err := client.NewClient(ctx, client.ClientConfig{Server: srv, Require: req, MinAnonymity: c.Int("min-anonymity"), AcceptBudgetDrops: c.Bool("accept-budget-drops"),
		Now: c.Bool("now"), MaxRate: rate, DataDir: data, Logger: logger(c), Progress: w, Notices: stderr(c)})
	if err != nil {
		return nil, joinError(srv, err)
	}
	return cl, nil
}

// timeoutFlag bounds a share or get.
func timeoutFlag() cli.Flag {
	return &cli.DurationFlag{Name: "timeout", Usage: "give up after this long (0: wait until done or interrupted)"}
}

// withTimeout applies --timeout to ctx.
func withTimeout(ctx context.Context, c *cli.Context) (context.Context, context.CancelFunc) {
	if d := c.Duration("timeout"); d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// jobError words the error of a share or get job: an interrupt or a
// timeout says so and what became of the job, not "context canceled".
func jobError(ctx context.Context, c *cli.Context, what string, err error, p *progress) error {
	msg := jobMessage(err)
	switch {
	case interrupt.Load() != 0:
		if msg == "" {
			msg = "stopped"
		}
		return fmt.Errorf("%s: interrupted: %s", what, msg)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		if last := p.lastLine(); last != "" && !strings.Contains(msg, last) {
			if msg != "" {
				msg += "; "
			}
			msg += "last progress: " + last
		}
		return fmt.Errorf("%s: timed out after %v: %s", what, c.Duration("timeout"), msg)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// jobMessage is a job's error without the prefixes of the layers it came
// through.
func jobMessage(err error) string {
	msg := err.Error()
	for _, s := range []string{"node: running client: ", "peer refused: ", "context canceled: ", "context deadline exceeded: ", "context canceled", "context deadline exceeded"} {
		msg = strings.Replace(msg, s, "", 1)
	}
	return strings.TrimPrefix(msg, ": ")
}

// joinError words a failure to reach the primary: libp2p lists every
// address it dialled, in several lines of its own terms; the user needs
// the server, the last cause and what to check.
func joinError(srv string, err error) error {
	msg := err.Error()
	if !strings.Contains(msg, "dial") {
		return fmt.Errorf("join through %s: %w", srv, err)
	}
	cause := strings.TrimSpace(msg[strings.LastIndex(msg, ": ")+1:])
	return fmt.Errorf("cannot reach the server %s: %s (is it running? riffle id --data DIR on its machine prints its addresses)", srv, cause)
}

// parseRate reads a rate such as 2MiB/s or 5GB/h in bytes a second ("":
// none; a bare size is a second's).
func parseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	per := 1.0
	if v, ok := strings.CutSuffix(s, "/s"); ok {
		s = v
	} else if v, ok := strings.CutSuffix(s, "/h"); ok {
		s, per = v, 3600
	}
	n, err := parseSize(s)
	if err != nil {
		return 0, err
	}
	return float64(n) / per, nil
}
