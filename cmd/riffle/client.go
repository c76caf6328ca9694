package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

func init() {
	register(&cli.Command{
		Name:  "client",
		Usage: "take part in every epoch as cover until SIGINT or SIGTERM",
		Description: `A long-running participant: it joins every epoch through its primary and
sends one onion and k PIR queries every round, giving cover to those who share
and fetch. Progress (epochs, anonymity set) goes to stderr.`,
		Flags:  clientFlags(),
		Action: runClient,
	})
}

func runClient(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("client takes no arguments, got %q", c.Args().First())
	}
	// The client runs on a context of its own: an interrupt asks it to
	// leave the way docs/protocol.md §5.4 says, a second one at once.
	base, cancelBase := context.WithCancel(c.Context)
	defer cancelBase()
	ctx, stop := signalContext(c.Context)
	defer stop()
	cl, err := startClient(base, c)
	if err != nil {
		return err
	}
	dir, err := clientDataDir(c)
	if err != nil {
		cl.Close()
		return err
	}
	// share, get and ls on this machine hand their jobs over this socket.
	go func() {
		if err := cl.ServeControl(ctx, filepath.Join(dir, node.ControlSocket)); err != nil {
			fmt.Fprintf(stderr(c), "riffle client: control socket: %v\n", err)
		}
	}()
	<-ctx.Done()
	stop()
	if !c.Bool("now") {
		fmt.Fprintln(stderr(c), "riffle client: leaving once no job is left and a few full epochs after the last one, "+
			"so that when it leaves says nothing about a job (interrupt again to leave now)")
	}
	lctx, lstop := signalContext(c.Context)
	defer lstop()
	st := cl.Stats()
	if err := cl.Leave(lctx); err != nil {
		return fmt.Errorf("close client: %w", err)
	}
	fmt.Fprintf(stderr(c), "riffle client stopped: %d epochs, %d rounds\n", st.Epochs, st.Rounds)
	return nil
}
