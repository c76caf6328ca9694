package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node"
)

// benchStartTimeout bounds how long a network of n clients may take to
// reach its first round (registration, the setup chain and its proofs).
const benchStartTimeout = 5 * time.Minute

func init() {
	register(&cli.Command{
		Name:  "bench",
		Usage: "measure per-client goodput and round time on a loopback network",
		Description: `For each n in --clients, starts 3 servers and n clients on 127.0.0.1 in this
process, waits for the first round, has one client share a file of --rounds
chunks and another fetch it, and reports the time to the first round, the mean
round time, and per-client goodput (chunk payload moved per client per second)
for sharing and fetching. Numbers depend on the machine's load: compare rows of
one run, not runs.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "clients", Value: "16,64,200", Usage: "comma-separated crowd sizes n"},
			&cli.IntFlag{Name: "rounds", Value: 8, Usage: "chunks in the shared file (about one round each)"},
			&cli.IntFlag{Name: "chunk-size", Value: int(node.DefaultParams().ChunkSize), Usage: "epoch parameter b"},
			&cli.IntFlag{Name: "k", Usage: "epoch parameter k (default: node's)"},
			verboseFlag(),
		},
		Action: runBench,
	})
}

// benchRow is the outcome for one crowd size.
type benchRow struct {
	n                  int
	firstRound         time.Duration // start to the first round
	upRounds, upChunks int
	upTime             time.Duration
	downRounds         int
	downTime           time.Duration
	bytes              int
}

func (r benchRow) roundTime() time.Duration {
	if r.upRounds == 0 {
		return 0
	}
	return r.upTime / time.Duration(r.upRounds)
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
	rounds := c.Int("rounds")
	if rounds < 1 {
		return fmt.Errorf("--rounds %d: want at least 1", rounds)
	}
	// Epochs long enough that the measured share and get never wait for a
	// new setup: the share's chunks, its manifest, the get's requests and
	// slack for the pipeline.
	params, err := paramsWith(node.DefaultParams(), c.Int("chunk-size"), 4*rounds+16, c.Int("k"), demoRegWindow, 2*time.Minute)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	out := stdout(c)
	fmt.Fprintf(out, "riffle bench: 3 servers, b = %d B, k = %d, file of %d chunks; loopback, one process\n", params.ChunkSize, params.K, rounds)
	// Fixed widths rather than a tabwriter: each row is printed as soon as
	// it is measured, which can take minutes at n = 200.
	const rowFmt = "%5v %12v %11v %21v %19v %13v %11v\n"
	fmt.Fprintf(out, rowFmt, "n", "first round", "round time", "share goodput/client", "get goodput/client", "share rounds", "get rounds")
	for _, n := range counts {
		r, err := benchOne(ctx, c, n, rounds, params)
		if err != nil {
			return fmt.Errorf("bench n = %d: %w", n, err)
		}
		fmt.Fprintf(out, rowFmt, r.n, r.firstRound.Round(time.Millisecond), r.roundTime().Round(time.Millisecond),
			humanBytes(uint64(float64(r.bytes)/r.upTime.Seconds()))+"/s", humanBytes(uint64(float64(r.bytes)/r.downTime.Seconds()))+"/s", r.upRounds, r.downRounds)
	}
	return nil
}

// benchOne measures one crowd size.
func benchOne(ctx context.Context, c *cli.Context, n, chunks int, params wire.Params) (benchRow, error) {
	row := benchRow{n: n}
	dir, err := os.MkdirTemp("", "riffle-bench-")
	if err != nil {
		return row, fmt.Errorf("bench directory: %w", err)
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	dn, err := startDemoNet(ctx, demoNetConfig{Dir: dir, Clients: n, Params: params, Logger: logger(c)})
	if err != nil {
		return row, err
	}
	defer dn.Close()
	sctx, cancel := context.WithTimeout(ctx, benchStartTimeout)
	defer cancel()
	if err := waitRounds(sctx, dn.clients[0], 1); err != nil {
		return row, fmt.Errorf("no round within %v: %w", benchStartTimeout, err)
	}
	row.firstRound = time.Since(start)

	// The file fills `chunks` data chunks exactly (the manifest adds one).
	b := int(params.ChunkSize)
	row.bytes = chunks * b
	data, err := io.ReadAll(sampleReader(int64(row.bytes)))
	if err != nil {
		return row, err
	}
	s0 := dn.clients[0].Stats()
	t0 := time.Now()
	link, err := dn.clients[0].Share(ctx, bytes.NewReader(data), "bench.bin", false)
	if err != nil {
		return row, fmt.Errorf("share: %w", err)
	}
	row.upTime = time.Since(t0)
	row.upRounds = dn.clients[0].Stats().Rounds - s0.Rounds

	dl := filepath.Join(dir, "download")
	if err := os.MkdirAll(dl, 0o700); err != nil {
		return row, fmt.Errorf("bench download directory: %w", err)
	}
	g0 := dn.clients[1].Stats()
	t0 = time.Now()
	path, err := dn.clients[1].Get(ctx, link, dl)
	if err != nil {
		return row, fmt.Errorf("get: %w", err)
	}
	row.downTime = time.Since(t0)
	row.downRounds = dn.clients[1].Stats().Rounds - g0.Rounds
	got, err := os.ReadFile(path)
	if err != nil {
		return row, fmt.Errorf("read fetched file: %w", err)
	}
	if !bytes.Equal(got, data) {
		return row, fmt.Errorf("fetched %d bytes differ from the %d shared", len(got), len(data))
	}
	return row, dn.Close()
}

// waitRounds waits until client cl has taken part in at least r rounds.
func waitRounds(ctx context.Context, cl *node.Client, r int) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for cl.Stats().Rounds < r {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
