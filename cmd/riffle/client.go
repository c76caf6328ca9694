package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "client",
		Usage: "take part in every epoch as cover until SIGINT or SIGTERM",
		Description: `A long-running participant: it joins every epoch through its primary and
sends one onion and k PIR queries every round, giving cover to those who share
and fetch. Progress (epochs, anonymity set) goes to stderr.`,
		Flags: append(append(clientFlags(), &cli.StringFlag{Name: "max-rate",
			Usage: "refuse a group whose constants let this client send or receive more than RATE, e.g. 1MiB/s or 2GB/h (checked once per group; riffle status shows the group's figure)"}),
			uiFlags("")...),
		Action: runClient,
	})
}

func runClient(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if err := checkUIFlags(c); err != nil {
		return err
	}
	// The client runs on a context of its own: an interrupt asks it to
	// leave the way docs/protocol.md §5.4 says, a second one at once.
	base, cancelBase := context.WithCancel(c.Context)
	defer cancelBase()
	ctx, stop := signalContext(c.Context)
	defer stop()
	dir, err := clientDataDir(c)
	if err != nil {
		return err
	}
	// One client per data directory: a second would share its database
	// and local socket.
	sock := filepath.Join(dir, webui.SocketFile)
	if webui.Available(sock) {
		return fmt.Errorf("a riffle client already runs on data directory %s; stop it first, or give this one another --data", dir)
	}
	p := newProgress(c)
	p.tty = false // a daemon's progress is a log
	cl, err := startClient(base, c, p)
	if err != nil {
		return err
	}
	// The web UI's API, and the jobs started through it, last as long as
	// the client: a job handed over by `riffle get` or started in the
	// browser is one the client finishes before it leaves. On a second
	// interrupt the client closes at once and the jobs return with its
	// error; the command returns only after them. share, get, ls, status
	// and resume on this machine use the API on the socket; if it cannot
	// be served, the client stops.
	ui, url, err := startClientUI(base, c, cl, c.String("ui"), c.Bool("ui-public"), dir, filepath.Join(dir, uiDownloadsSubdir), c.StringSlice("share-dir"))
	if err != nil {
		cl.Close()
		return err
	}
	uiWait := ui.Wait
	if url != "" {
		fmt.Fprintln(stdout(c), url)
	}
	ctlErr := make(chan error, 1)
	go func() { ctlErr <- ui.ServeLocal(ctx, sock) }()
	select {
	case <-ctx.Done():
	case <-cl.Done():
		// The client stopped by itself: a group over --max-rate.
		if err := cl.Err(); err != nil {
			cl.Close()
			uiWait()
			return err
		}
		<-ctx.Done()
	case err := <-ctlErr:
		if err != nil {
			cl.Close()
			return fmt.Errorf("local socket: %w", err)
		}
		<-ctx.Done()
	}
	stop()
	if !c.Bool("now") {
		fmt.Fprintln(stderr(c), "riffle client: leaving once no job is left and a few full epochs after the last one, "+
			"so that when it leaves says nothing about a job (interrupt again to leave now)")
	}
	lctx, lstop := signalContext(c.Context)
	defer lstop()
	st := cl.Stats()
	err = cl.Leave(lctx)
	cancelBase()
	uiWait()
	if err != nil {
		return fmt.Errorf("close client: %w", err)
	}
	fmt.Fprintf(stderr(c), "riffle client stopped: %d epochs, %d rounds\n", st.Epochs, st.Rounds)
	return nil
}
