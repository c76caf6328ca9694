package main

import (
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
		Flags:  append(clientFlags(), uiFlags("")...),
		Action: runClient,
	})
}

func runClient(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("client takes no arguments, got %q", c.Args().First())
	}
	if err := checkUIFlags(c); err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	cl, err := startClient(ctx, c)
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
	if addr := c.String("ui"); addr != "" {
		url, err := startClientUI(ctx, c, cl, addr, c.Bool("ui-public"), dir, filepath.Join(dir, uiDownloadsSubdir))
		if err != nil {
			cl.Close()
			return err
		}
		fmt.Fprintln(stdout(c), url)
	}
	<-ctx.Done()
	st := cl.Stats()
	if err := cl.Close(); err != nil {
		return fmt.Errorf("close client: %w", err)
	}
	fmt.Fprintf(stderr(c), "riffle client stopped: %d epochs, %d rounds\n", st.Epochs, st.Rounds)
	return nil
}
