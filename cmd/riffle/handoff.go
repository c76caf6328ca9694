package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/node/client"
)

// runningClient returns the local API of a `riffle client` running with
// this command's data directory, or nil if none runs: share, get and ls
// then hand their jobs to it instead of joining epochs on their own (one
// long-lived participant gives better cover than many short ones).
//
// The job runs under the running client's settings, and the command says
// which. Only a flag the user set for this command (on the command line
// or in the environment; the config file gives defaults) that the client
// does not honour refuses the job, naming the flag.
func runningClient(ctx context.Context, c *cli.Context) (*webui.LocalClient, error) {
	dir, err := clientDataDir(c)
	if err != nil {
		return nil, nil
	}
	lc, err := webui.DialLocal(filepath.Join(dir, webui.SocketFile))
	if errors.Is(err, webui.ErrNoClient) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := lc.Status(sctx)
	if err != nil {
		return nil, fmt.Errorf("a riffle client runs on data directory %s but does not answer: %w", dir, err)
	}
	if err := handoverConflict(c, st); err != nil {
		return nil, fmt.Errorf("%w: refusing to hand it this job; drop the flag to run the job under that client's settings, "+
			"or stop that client (it runs on data directory %s), or give this command another --data", err, dir)
	}
	if !quiet(c) {
		fmt.Fprintf(stderr(c), "handing the job to the riffle client running on %s, under its settings: %s\n", dir, clientSettings(st))
	}
	return lc, nil
}

// clientSettings says what a running client's jobs run under.
func clientSettings(st *client.ClientStatus) string {
	s := fmt.Sprintf("server %s, min-anonymity %d", st.Primary, st.MinAnonymity)
	if len(st.Require) > 0 {
		s += ", require-server " + strings.Join(st.Require, " ")
	}
	if st.AcceptBudgetDrops {
		s += ", accept-budget-drops"
	}
	return s
}

// handoverConflict names the flag the user set for this command that the
// running client of status st does not honour (nil: none). A stricter
// client is no conflict: it requires more servers, or a larger anonymity
// set, than the user asked for.
func handoverConflict(c *cli.Context, st *client.ClientStatus) error {
	if src := explicitFlag(c, "server"); src != "" {
		s, err := primary(c)
		if err != nil {
			return err
		}
		a, _ := ma.NewMultiaddr(s)
		ai, _ := peer.AddrInfoFromP2pAddr(a)
		if ai.ID.String() != st.Primary {
			return fmt.Errorf("%s names server %s, but the running client joins through server %s, not %s", src, ai.ID, st.Primary, ai.ID)
		}
	}
	if src := explicitFlag(c, "require-server"); src != "" {
		req, err := requiredServers(c)
		if err != nil {
			return err
		}
		for _, r := range req {
			if r.String() != st.Primary && !slices.Contains(st.Require, r.String()) {
				return fmt.Errorf("%s %s: the running client does not require server %s (it requires %s)", src, r, r, strings.Join(append([]string{st.Primary}, st.Require...), ", "))
			}
		}
	}
	if src := explicitFlag(c, "min-anonymity"); src != "" && c.Int("min-anonymity") > st.MinAnonymity {
		return fmt.Errorf("%s %d: the running client holds jobs only for an anonymity set of at least %d clients", src, c.Int("min-anonymity"), st.MinAnonymity)
	}
	if src := explicitFlag(c, "accept-budget-drops"); src != "" && !c.Bool("accept-budget-drops") && st.AcceptBudgetDrops {
		return fmt.Errorf("%s=false: the running client takes chains that dropped a server for its refusal budget (it runs with --accept-budget-drops)", src)
	}
	return nil
}

// explicitFlag returns how the user set flag name for this command:
// "--name" on the command line, "$VAR" in the environment, or "" when the
// flag has its default or the config file's value.
func explicitFlag(c *cli.Context, name string) string {
	if name == "server" {
		// $RIFFLE_SERVER is read by primary, not by the flag.
		if c.String("server") != "" {
			return "--server"
		}
		if strings.TrimSpace(os.Getenv(envServer)) != "" {
			return "$" + envServer
		}
		return ""
	}
	if !c.IsSet(name) || setFromConfig[name] {
		return ""
	}
	for _, f := range c.Command.Flags {
		ef, ok := f.(interface{ GetEnvVars() []string })
		if !ok || !slices.Contains(f.Names(), name) {
			continue
		}
		// The command line wins over the environment: the variable is
		// named only when the value is its.
		for _, e := range ef.GetEnvVars() {
			v := strings.TrimSpace(os.Getenv(e))
			if v == "" {
				continue
			}
			if b, err := strconv.ParseBool(v); err == nil && c.Value(name) == b || v == fmt.Sprint(c.Value(name)) {
				return "$" + e
			}
		}
	}
	return "--" + name
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
	return &cli.IntFlag{Name: "max-epochs", Usage: fmt.Sprintf("pause each job after it sent real traffic in N epochs (1 to %d, the network's J; default J): a job spanning more epochs is linkable across them", client.JobEpochs)}
}

// withMaxEpochs checks --max-epochs and puts it in ctx for the jobs.
func withMaxEpochs(ctx context.Context, c *cli.Context) (context.Context, error) {
	if !c.IsSet("max-epochs") {
		return ctx, nil
	}
	n := c.Int("max-epochs")
	if n < 1 || n > client.JobEpochs {
		return ctx, usagef("--max-epochs %d: give 1 to %d (a job may not span more epochs than the network's J)", n, client.JobEpochs)
	}
	return client.WithMaxEpochs(ctx, n), nil
}

// maxEpochs is --max-epochs for a job handed to a running client (0: not
// set, the network's J), once withMaxEpochs has checked it.
func maxEpochs(c *cli.Context) int {
	if !c.IsSet("max-epochs") {
		return 0
	}
	return c.Int("max-epochs")
}
