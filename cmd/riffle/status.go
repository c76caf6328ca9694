package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
)

func init() {
	register(&cli.Command{
		Name:  "status",
		Usage: "show what a running server or client sees: roster, chain, epoch, anonymity set, round time, goodput",
		Description: `With --data DIR of a server (it holds identity.key), prints the status that
the running server keeps in DIR/status.json: its roster of live peers, the chain
and the current epoch with its anonymity set, round time and goodput. Otherwise
asks the riffle client running on the client data directory (--data, default
under the user config directory) over its local API: the server it joins
through, the servers it requires, its epoch, and why it waits if it does.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "a server's or a client's data directory (default: the client's)"},
			&cli.BoolFlag{Name: "json", Usage: "print the status as JSON"},
			verboseFlag(),
		},
		Action: runStatus,
	})
}

func runStatus(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	dir := c.String("data")
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, node.IdentityFile)); err == nil {
			return serverStatus(c, dir)
		}
	}
	dir, err := clientDataDir(c)
	if err != nil {
		return err
	}
	lc, err := webui.DialLocal(filepath.Join(dir, webui.SocketFile))
	if errors.Is(err, webui.ErrNoClient) {
		return fmt.Errorf("no riffle client runs on data directory %s (start one with riffle client; for a server give --data SERVER_DIR)", dir)
	}
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	st, err := lc.Status(ctx)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(stdout(c), st)
	}
	tw := tabwriter.NewWriter(stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "client\t%s\n", dir)
	fmt.Fprintf(tw, "server\t%s\n", st.Server)
	if len(st.Require) > 0 {
		fmt.Fprintf(tw, "requires\t%s\n", strings.Join(st.Require, ", "))
	}
	printEpoch(tw, st.Epoch, st.Chain, st.AnonymitySet, st.ChunkSize, st.EpochRounds, st.RoundTime, st.Throughput)
	if st.Epoch != "" && st.RoundTime > 0 {
		fmt.Fprintf(tw, "goodput\t%s/s (this client's own chunks)\n", humanBytes(uint64(st.Goodput)))
	}
	if st.Waiting != "" {
		fmt.Fprintf(tw, "waiting\t%s\n", st.Waiting)
	}
	printTraffic(tw, *st)
	for _, j := range st.Paused {
		name := j.Name
		if name == "" {
			name = j.ID
		}
		fmt.Fprintf(tw, "paused\t%s %s: %s\n", j.Kind, printable(name), j.Reason)
	}
	fmt.Fprintf(tw, "done\t%d epochs, %d rounds, %d chunks uploaded, %d fetched\n", st.Stats.Epochs, st.Stats.Rounds, st.Stats.Uploaded, st.Stats.Fetched)
	return tw.Flush()
}

func serverStatus(c *cli.Context, dir string) error {
	path := filepath.Join(dir, statusFile)
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no riffle server runs on %s (it writes %s while it runs)", dir, statusFile)
	}
	if err != nil {
		return err
	}
	if age := time.Since(fi.ModTime()); age > statusStale {
		return fmt.Errorf("no riffle server runs on %s: its status is %v old (a server that died leaves it)", dir, age.Round(time.Second))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var st node.ServerStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if c.Bool("json") {
		return printJSON(stdout(c), st)
	}
	tw := tabwriter.NewWriter(stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "server\t%s (%s)\n", st.ID, printable(st.Nick))
	fmt.Fprintf(tw, "roster\t%d live peers besides this server; epochs need %d servers, %d clients\n", len(st.Roster), st.MinServers, st.MinClients)
	for _, m := range st.Roster {
		fmt.Fprintf(tw, "\t%s (%s), seen %v ago\n", m.ID, printable(m.Nick), m.Seen.Round(time.Second))
	}
	printEpoch(tw, st.Epoch, st.Chain, st.AnonymitySet, st.ChunkSize, st.Rounds, st.RoundTime, st.Throughput)
	return tw.Flush()
}

// printEpoch prints the epoch lines of a status.
func printEpoch(w io.Writer, epoch string, chain []node.ChainServer, anon, b, rounds int, rt time.Duration, throughput float64) {
	if epoch == "" {
		fmt.Fprintf(w, "epoch\tnone running\n")
		return
	}
	fmt.Fprintf(w, "epoch\t%s\n", epoch[:16])
	for i, s := range chain {
		fmt.Fprintf(w, "chain %d\t%s (%s)\n", i+1, s.ID, printable(s.Nick))
	}
	fmt.Fprintf(w, "anonymity set\t%d clients\n", anon)
	fmt.Fprintf(w, "chunk size\t%s\n", humanBytes(uint64(b)))
	fmt.Fprintf(w, "rounds\t%d\n", rounds)
	if rt > 0 {
		fmt.Fprintf(w, "round time\t%v\n", rt.Round(time.Millisecond))
		fmt.Fprintf(w, "throughput\t%s/s (chunks and cover)\n", humanBytes(uint64(throughput)))
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTraffic says what the client sends and receives an hour: the
// group's worst case from its constants, and what it measured.
func printTraffic(w io.Writer, st client.ClientStatus) {
	if st.GroupSendPerHour > 0 {
		fmt.Fprintf(w, "group cost\t%s/h sent, %s/h received at most (from the group's constants)\n",
			humanBytes(uint64(st.GroupSendPerHour)), humanBytes(uint64(st.GroupRecvPerHour)))
	}
	fmt.Fprintf(w, "traffic\t%s/h sent, %s/h received since this client started\n",
		humanBytes(uint64(st.SentPerHour)), humanBytes(uint64(st.RecvPerHour)))
	if st.MaxRate > 0 {
		fmt.Fprintf(w, "max rate\t%s/s\n", humanBytes(uint64(st.MaxRate)))
	}
}
