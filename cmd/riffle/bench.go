package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/cmd/riffle/internal/benchreport"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/localnet"
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
of one run, not runs.

In the same run, for each n, a baseline moves the same bytes between the same
kinds of hosts without riffle: every client uploads b bytes and downloads b
bytes per round straight over libp2p (TCP, TLS, yamux) to one server, for as
many rounds; "vs baseline" is riffle's steady per-client goodput as a fraction
of the baseline's, the price of anonymity. Before the rows, the run measures the
machine's ceilings (AES-GCM, SHA-256, XOR in cache, memcpy, a loopback libp2p
stream); after each row it prints each stage's rate and its ratio to its ceiling.

--quic runs each n twice, over TCP and then with the servers listening on
QUIC only (rows "n/tcp" and "n/quic"), each row followed by the process's CPU
time over the shares and gets, and after the pair the QUIC run's round time and
CPU as multiples of the TCP run's; the baseline runs with the TCP row only.

--paper writes the paper-style report (Markdown and SVG plots) into --out; only
a binary built with "make paper" draws the plots (they link a plotting library
no other command needs).
--processes runs each server as its own process (this binary, riffle server on
127.0.0.1 with --no-mdns) and the clients in this one, and reports each server's
CPU time and peak RSS (from /proc) beside the goodputs, then (unless --no-baseline)
the baseline between a plain-libp2p server process and the clients' process; there "vs baseline" is
the baseline's time to move each client's file up and a file down over riffle's
share and get time. --servers runs only the
clients, against servers running elsewhere (make netns uses it).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "clients", Value: "16,64,200", Usage: "comma-separated crowd sizes n"},
			&cli.IntFlag{Name: "rounds", Value: 8, Usage: "chunks each client shares (about one round each)"},
			&cli.IntFlag{Name: "chunk-size", Value: int(node.DefaultParams().ChunkSize), Usage: "epoch parameter b"},
			&cli.IntFlag{Name: "k", Value: int(node.DefaultParams().K), Usage: "epoch parameter k"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole run to `FILE` (go tool pprof); with --processes, each server's to FILE.nN.sI"},
			&cli.StringFlag{Name: "memprofile", Usage: "write a heap profile to `FILE` at the run's highest live heap (sampled every second; go tool pprof); with --processes, each server's to FILE.nN.sI"},
			&cli.BoolFlag{Name: "no-baseline", Usage: "skip the plain-libp2p baseline"},
			&cli.BoolFlag{Name: "quic", Usage: "run each n over TCP and over QUIC and compare their round time and CPU"},
			&cli.BoolFlag{Name: "no-ceilings", Usage: "skip measuring the machine's ceilings"},
			&cli.BoolFlag{Name: "paper", Usage: "write the paper-style report and plots into --out (a binary built with make paper)"},
			&cli.BoolFlag{Name: "quick", Usage: "with --paper: tiny sizes (for tests)"},
			&cli.BoolFlag{Name: "setup-10k", Usage: "with --paper: also time setup at n = 10,000"},
			&cli.StringFlag{Name: "out", Value: "docs/bench/paper", Usage: "with --paper: output directory"},
			&cli.StringFlag{Name: "note", Usage: "with --paper: a paragraph on the machine for the report (what else ran on it)"},
			&cli.BoolFlag{Name: "processes", Usage: "run each server as a separate process (riffle server) and the clients in this one; report each server's CPU and peak RSS"},
			&cli.BoolFlag{Name: "baseline-serve", Hidden: true, Usage: "serve the plain-libp2p baseline on 127.0.0.1 (--processes starts it)"},
			&cli.StringFlag{Name: "servers", Usage: "run only the clients, against these servers (comma-separated multiaddrs with /p2p/)"},
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

func runBench(c *cli.Context) (err error) {
	counts, err := parseCounts(c.String("clients"))
	if err != nil {
		return err
	}
	chunks, b, k := c.Int("rounds"), c.Int("chunk-size"), c.Int("k")
	if chunks < 1 {
		return fmt.Errorf("--rounds %d: want at least 1", chunks)
	}
	// Range checks with the flags' names; localnet.Bench checks again.
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
	if path := c.String("memprofile"); path != "" {
		ph, err := startPeakHeap(path, time.Second)
		if err != nil {
			return err
		}
		defer func() {
			peak, perr := ph.finish()
			fmt.Fprintf(out, "peak live heap %s (this process), profile at that peak in %s\n", humanBytes(peak), path)
			if err == nil {
				err = perr
			}
		}()
	}
	if c.Bool("paper") {
		return runBenchPaper(ctx, c)
	}
	if c.Bool("baseline-serve") {
		return runBaselineServe(ctx, c, b)
	}
	if c.IsSet("servers") {
		return runBenchRemote(ctx, c, counts, chunks, k)
	}
	if c.Bool("processes") {
		return runBenchProcesses(ctx, c, counts, chunks, b, k)
	}
	var ceil benchreport.Ceilings
	if !c.Bool("no-ceilings") {
		if ceil, err = benchreport.Measure(ctx, 300*time.Millisecond); err != nil {
			return fmt.Errorf("ceilings: %w", err)
		}
		printCeilings(out, ceil)
	}
	fmt.Fprintf(out, "riffle bench: 3 servers, b = %d B, k = %d, every client shares %d chunks then fetches a file; loopback, one process\n", b, k, chunks)
	// Fixed widths rather than a tabwriter: each row is printed as soon as
	// it is measured, which takes minutes at n = 200.
	// steady is the per-client rate of a round in steady state: each
	// client moves one chunk of b bytes a round each way (k of them down);
	// share/client and get/client also pay the manifest's round and the
	// pipeline's fill.
	const rowFmt = "%5v %13v %13v %13v %10v %10v %10v %10v %10v %10v %7v %15v %12v\n"
	fmt.Fprintf(out, rowFmt, "n", "share/client", "get/client", "steady/client", "round", "chain mix", "verify", "store", "PIR", "other", "rounds", "baseline/client", "vs baseline")
	transports := []string{"tcp"}
	if c.Bool("quic") {
		transports = append(transports, "quic")
	}
	for _, n := range counts {
		var byTransport []localnet.BenchResult
		for _, tr := range transports {
			r, err := localnet.Bench(ctx, localnet.BenchConfig{Clients: n, ChunkSize: b, K: k, Chunks: chunks, QUIC: tr == "quic", Logger: logger(c)})
			if err != nil {
				return fmt.Errorf("bench n = %d over %s: %w", n, tr, err)
			}
			byTransport = append(byTransport, r)
			noteResumed(c, fmt.Sprintf("n = %d over %s", n, tr), r)
			steady := float64(b) / r.RoundTime.Seconds()
			base, vs := "-", "-"
			if !c.Bool("no-baseline") && tr == "tcp" {
				bl, err := localnet.Baseline(ctx, n, b, r.Rounds)
				if err != nil {
					return fmt.Errorf("baseline n = %d: %w", n, err)
				}
				base, vs = humanBytes(uint64(bl.Goodput))+"/s", fmt.Sprintf("%.3g", steady/bl.Goodput)
			}
			label := fmt.Sprint(r.Clients)
			if len(transports) > 1 {
				label += "/" + tr
			}
			fmt.Fprintf(out, rowFmt, label, humanBytes(uint64(r.UploadGoodput))+"/s", humanBytes(uint64(r.DownloadGoodput))+"/s",
				humanBytes(uint64(steady))+"/s", ms(r.RoundTime), ms(r.ChainMix), ms(r.Verify), ms(r.Store), ms(r.PIR), ms(r.Other), r.Rounds, base, vs)
			if !c.Bool("no-ceilings") {
				printStages(out, benchreport.Stages(roundOf(r), ceil))
			}
			if len(transports) > 1 {
				fmt.Fprintf(out, "      cpu over share and get: %.2fs\n", r.CPU.Seconds())
			}
		}
		if len(byTransport) == 2 {
			t, q := byTransport[0], byTransport[1]
			fmt.Fprintf(out, "      quic/tcp: round time %.2f, share time %.2f, get time %.2f, cpu %.2f\n",
				ratio(q.RoundTime, t.RoundTime), ratio(q.ShareTime, t.ShareTime), ratio(q.GetTime, t.GetTime), ratio(q.CPU, t.CPU))
		}
	}
	return nil
}

// noteResumed says on stderr, outside the table, that a run let paused
// jobs go on: their pauses are in its goodputs.
func noteResumed(c *cli.Context, run string, r localnet.BenchResult) {
	if r.Resumed > 0 {
		fmt.Fprintf(stderr(c), "riffle bench: %s: %d paused jobs let go on (a bench resumes them for its user); the pauses count in the goodputs\n", run, r.Resumed)
	}
}

// ratio is a/b, or 0 if b is zero.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// roundOf is the round part of a bench result.
func roundOf(r localnet.BenchResult) benchreport.Round {
	return benchreport.Round{Servers: r.Servers, Clients: r.Clients, ChunkSize: r.ChunkSize, K: r.K,
		ChainMix: r.ChainMix, Verify: r.Verify, Store: r.Store, PIR: r.PIR, Other: r.Other}
}

func printCeilings(out io.Writer, c benchreport.Ceilings) {
	fmt.Fprintf(out, "machine ceilings (%d cores):", c.Cores)
	for _, row := range c.Rows() {
		fmt.Fprintf(out, " %s %s/s;", row[0], humanBytes(uint64(row[1].(float64))))
	}
	fmt.Fprintln(out)
}

func printStages(out io.Writer, st []benchreport.Stage) {
	fmt.Fprint(out, "      stage/ceiling:")
	for _, s := range st {
		fmt.Fprintf(out, " %s %s/s = %.3f of %s;", s.Name, humanBytes(uint64(s.Rate)), s.Ratio, s.Ceiling)
	}
	fmt.Fprintln(out)
}
