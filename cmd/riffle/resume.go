package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/node/client"
)

func init() {
	register(&cli.Command{
		Name:      "resume",
		Usage:     "let paused jobs of the running client go on for J more epochs",
		ArgsUsage: "[FILE-ID]",
		Description: fmt.Sprintf(`A share or get that has sent real traffic in J epochs (%d, the same for every
client; lower with --max-epochs) pauses: it sends cover only, because going on
would tie it to the clients present in every epoch it spans, fewer each time.
"riffle status" lists paused jobs and why. resume lets the job of FILE-ID (the
id in its link; every paused job without one) send in J more epochs. To cancel
a job instead, interrupt the share or get that waits on it.`, client.JobEpochs),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "the client's data directory (default under the user config directory)"},
		},
		Action: runResume,
	})
}

func runResume(c *cli.Context) error {
	if c.NArg() > 1 {
		return usagef("resume takes at most one FILE-ID")
	}
	id := strings.TrimSpace(c.Args().First())
	if id != "" {
		// The id alone, or a link's id part (its key is not needed).
		text, _, _ := strings.Cut(strings.TrimPrefix(strings.ToLower(id), chunker.LinkScheme), "#")
		fid, err := chunker.ParseID(text)
		if err != nil {
			// Not echoed if it is a private link: it carries a key.
			if strings.Contains(id, "#") {
				return usagef("resume: not a file id: %v", err)
			}
			return usagef("resume: %q is not a file id: %v", id, err)
		}
		id = fid.String()
	}
	dir, err := clientDataDir(c)
	if err != nil {
		return err
	}
	lc, err := webui.DialLocal(filepath.Join(dir, webui.SocketFile))
	if errors.Is(err, webui.ErrNoClient) {
		return fmt.Errorf("no riffle client runs on data directory %s: nothing to resume", dir)
	}
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	n, err := lc.Resume(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		if id != "" {
			return fmt.Errorf("no paused job of file %s (riffle status lists paused jobs)", id)
		}
		return fmt.Errorf("no paused job (riffle status lists paused jobs)")
	}
	fmt.Fprintf(stdout(c), "resumed %d job(s) for %d more epochs\n", n, client.JobEpochs)
	return nil
}
