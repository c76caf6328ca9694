package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/internal/nodetest"
	"github.com/riffle-net/riffle/node"
)

func init() {
	register(&cli.Command{
		Name:  "bench",
		Usage: "measure per-client goodput, round time and where it goes on a loopback network",
		Description: `For each n in --clients, the benchmark starts 3 servers and n clients on 127.0.0.1
in this process; every client shares a file of --rounds chunks, then fetches
another client's file. Reported per n: per-client goodput (chunk payload moved per
client per second) of the shares and of the gets, the mean round time, and where
a round's time goes: the chain's mixing, one server's pseudonym checks, store
transaction and PIR answers, and the rest (network and waiting; PIR of round r
overlaps the mixing of r+1). Numbers depend on the machine's load: compare rows
of one run, not runs.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "clients", Value: "16,64,200", Usage: "comma-separated crowd sizes n"},
			&cli.IntFlag{Name: "rounds", Value: 8, Usage: "chunks each client shares (about one round each)"},
			&cli.IntFlag{Name: "chunk-size", Value: int(node.DefaultParams().ChunkSize), Usage: "epoch parameter b"},
			&cli.IntFlag{Name: "k", Value: int(node.DefaultParams().K), Usage: "epoch parameter k"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole run to `FILE` (go tool pprof)"},
			verboseFlag(),
		},
		Action: runBench,
	})
}

// parseCounts parses "16,64,200".
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < node.DefaultMinClients {
			return nil, fmt.Errorf("--clients %q: each count must be an integer of at least %d", s, node.DefaultMinClients)
		}
		out = append(out, n)
	}
	return out, nil
}

func runBench(c *cli.Context) error {
	counts, err := parseCounts(c.String("clients"))
	if err != nil {
		return err
	}
	chunks, b, k := c.Int("rounds"), c.Int("chunk-size"), c.Int("k")
	if chunks < 1 {
		return fmt.Errorf("--rounds %d: want at least 1", chunks)
	}
	// Range checks with the flags' names; nodetest.Bench checks again.
	if _, err := paramsWith(node.DefaultParams(), b, 0, k, 0, 0); err != nil {
		return err
	}
	if path := c.String("cpuprofile"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	out := stdout(c)
	fmt.Fprintf(out, "riffle bench: 3 servers, b = %d B, k = %d, every client shares %d chunks then fetches a file; loopback, one process\n", b, k, chunks)
	// Fixed widths rather than a tabwriter: each row is printed as soon as
	// it is measured, which takes minutes at n = 200.
	// steady is the per-client rate of a round in steady state: each
	// client moves one chunk of b bytes a round each way (k of them down);
	// share/client and get/client also pay the manifest's round and the
	// pipeline's fill.
	const rowFmt = "%5v %13v %13v %13v %10v %10v %10v %10v %10v %10v %7v\n"
	fmt.Fprintf(out, rowFmt, "n", "share/client", "get/client", "steady/client", "round", "chain mix", "verify", "store", "PIR", "other", "rounds")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
	for _, n := range counts {
		r, err := nodetest.Bench(ctx, nodetest.BenchConfig{Clients: n, ChunkSize: b, K: k, Chunks: chunks, Logger: logger(c)})
		if err != nil {
			return fmt.Errorf("bench n = %d: %w", n, err)
		}
		steady := float64(b) / r.RoundTime.Seconds()
		fmt.Fprintf(out, rowFmt, r.Clients, humanBytes(uint64(r.UploadGoodput))+"/s", humanBytes(uint64(r.DownloadGoodput))+"/s",
			humanBytes(uint64(steady))+"/s", ms(r.RoundTime), ms(r.ChainMix), ms(r.Verify), ms(r.Store), ms(r.PIR), ms(r.Other), r.Rounds)
	}
	return nil
}
