package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
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
	ctx, stop := signalContext(c.Context)
	defer stop()
	cl, err := startClient(ctx, c)
	if err != nil {
		return err
	}
	<-ctx.Done()
	st := cl.Stats()
	if err := cl.Close(); err != nil {
		return fmt.Errorf("close client: %w", err)
	}
	fmt.Fprintf(stderr(c), "riffle client stopped: %d epochs, %d rounds\n", st.Epochs, st.Rounds)
	return nil
}
