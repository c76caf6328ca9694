package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/localnet"
)

// Demo defaults: 4 MiB in 64 KiB chunks is 64 data rounds plus the
// manifest, which on a 2-core machine runs in well under the two minutes a
// newcomer should wait, and still shows many rounds and an epoch change.
const (
	demoDefaultClients = 16
	demoDefaultSize    = 4 << 20
	demoDefaultChunk   = 64 << 10
	demoDefaultRounds  = 64
	// demoRegWindow is short: everyone is on loopback.
	demoRegWindow = 500 * time.Millisecond
	// A round not filled within the round limit ends the epoch, and the
	// next one starts: short, so that a lost submission costs seconds,
	// plus time per client, as rounds grow with the crowd (about 7 s at
	// 200 clients in one process on 2 cores).
	demoRoundLimitBase      = 10 * time.Second
	demoRoundLimitPerClient = 50 * time.Millisecond
	// demoSeed fixes the sample's bytes, so that every run shares the same
	// file and its SHA-256 can be compared across runs and machines.
	demoSeed = "riffle demo sample, version 1"
)

func init() {
	register(&cli.Command{
		Name:  "demo",
		Usage: "run 3 servers and a crowd of clients on loopback, share a file and fetch it",
		Description: `Starts three servers and --clients cover clients on 127.0.0.1 in this process,
shares a deterministic sample file from one client, fetches it from another,
compares the SHA-256 of both and prints what happened. Exits non-zero if the
bytes differ. With --keep the network stays up and the command prints how to use
it from another terminal.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "clients", Value: demoDefaultClients, Usage: "clients in the crowd (the anonymity set)"},
			&cli.IntFlag{Name: "size", Value: demoDefaultSize, Usage: "bytes of the sample file"},
			&cli.IntFlag{Name: "chunk-size", Value: demoDefaultChunk, Usage: "epoch parameter b for the demo"},
			&cli.IntFlag{Name: "rounds", Value: demoDefaultRounds, Usage: "rounds per epoch"},
			&cli.DurationFlag{Name: "round-interval", Value: time.Duration(node.MinRoundIntervalMs) * time.Millisecond,
				Usage: "the group pace (default the floor, so that the demo runs as fast as the machine does)"},
			&cli.BoolFlag{Name: "keep", Usage: "leave the network running until SIGINT and print how to use it"},
			&cli.BoolFlag{Name: "ui", Usage: "with --keep: serve a client's web UI and a server's operator view on loopback"},
			verboseFlag(),
		},
		Action: runDemo,
	})
}

// sampleReader returns size deterministic pseudo-random bytes (ChaCha8
// keyed by SHA-256 of demoSeed): incompressible, like a real file, and the
// same on every run.
func sampleReader(size int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8(sha256.Sum256([]byte(demoSeed))), size)
}

func runDemo(c *cli.Context) error {
	n, size := c.Int("clients"), c.Int("size")
	if n < node.DefaultMinClients {
		return fmt.Errorf("demo needs at least %d clients, got %d", node.DefaultMinClients, n)
	}
	if size < 0 {
		return fmt.Errorf("sample size %d bytes is negative", size)
	}
	params, err := paramsWith(node.DefaultParams(), c.Int("chunk-size"), c.Int("rounds"), 0, demoRegWindow,
		demoRoundLimitBase+time.Duration(n)*demoRoundLimitPerClient)
	if err == nil {
		params, err = paramsInterval(params, c.Duration("round-interval"))
	}
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	out, errw := stdout(c), stderr(c)
	begin := time.Now()
	base, err := os.MkdirTemp("", "riffle-demo-")
	if err != nil {
		return fmt.Errorf("demo directory: %w", err)
	}
	// The servers' data is the demo's alone: removed when it stops, even
	// after --keep.
	defer os.RemoveAll(base)
	keep := c.Bool("keep")
	if c.Bool("ui") && !keep {
		return fmt.Errorf("demo --ui needs --keep")
	}
	// The two clients that act print their progress; the rest is cover.
	rec := &epochRecorder{w: errw}
	dn, err := startDemoNet(ctx, demoNetConfig{Dir: base, Clients: n, Params: params, Logger: logger(c), Progress: rec, ProgressClients: 2})
	if err != nil {
		return err
	}
	defer dn.Close()
	for i := range dn.servers {
		fmt.Fprintf(out, "server %d: %s\n", i, dn.primaryAddr(i))
	}
	fmt.Fprintf(out, "%d clients joined; b = %d B, k = %d, %d rounds per epoch\n", n, params.ChunkSize, params.K, params.Rounds)

	sample := make([]byte, size)
	if _, err := io.ReadFull(sampleReader(int64(size)), sample); err != nil {
		return fmt.Errorf("generate sample: %w", err)
	}
	want := sha256.Sum256(sample)
	fmt.Fprintf(out, "client 0 shares sample.bin: %d bytes, sha256 %s\n", size, hex.EncodeToString(want[:]))
	// The demo's clients are in this process, out of `riffle resume`'s
	// reach: the demo lets a paused job go on and says so.
	stopResume := localnet.KeepGoing(ctx, dn.clients, logger(c))
	defer func() {
		if n := stopResume(); n > 0 {
			fmt.Fprintf(errw, "demo: %d paused jobs let go on (the demo resumes them for its user)\n", n)
		}
	}()
	start := time.Now()
	up0 := dn.clients[0].Stats()
	link, err := dn.clients[0].Share(ctx, bytes.NewReader(sample), "sample.bin", false)
	if err != nil {
		return fmt.Errorf("demo share: %w", err)
	}
	shared := time.Since(start)
	up1 := dn.clients[0].Stats()
	fmt.Fprintf(out, "shared in %s over %d rounds: %s\n", shared.Round(time.Millisecond), up1.Rounds-up0.Rounds, link)

	dl := filepath.Join(base, "download")
	if err := os.MkdirAll(dl, 0o700); err != nil {
		return fmt.Errorf("demo download directory: %w", err)
	}
	start = time.Now()
	down0 := dn.clients[1].Stats()
	path, err := dn.clients[1].Get(ctx, link, dl)
	if err != nil {
		return fmt.Errorf("demo get: %w", err)
	}
	fetched := time.Since(start)
	down1 := dn.clients[1].Stats()
	got, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read fetched file: %w", err)
	}
	have := sha256.Sum256(got)
	fmt.Fprintf(out, "client 1 fetched it in %s over %d rounds: %d bytes, sha256 %s\n",
		fetched.Round(time.Millisecond), down1.Rounds-down0.Rounds, len(got), hex.EncodeToString(have[:]))
	if have != want {
		return fmt.Errorf("demo: fetched file differs from the shared one (%d bytes, sha256 %x; shared %d bytes, sha256 %x)", len(got), have[:8], size, want[:8])
	}
	fmt.Fprintf(out, "bytes identical. epoch %s, anonymity set %d, %d epochs and %d rounds seen by client 1\n",
		rec.lastEpoch(), dn.clients[1].AnonymitySet(), down1.Epochs, down1.Rounds)
	fmt.Fprintf(out, "goodput: share %s/s, get %s/s; elapsed %s\n",
		humanBytes(uint64(float64(size)/shared.Seconds())), humanBytes(uint64(float64(size)/fetched.Seconds())), time.Since(begin).Round(time.Millisecond))

	if !keep {
		fmt.Fprintln(out, "stopping")
		return dn.Close()
	}
	uiWait := func() {}
	if c.Bool("ui") {
		w, err := startDemoUI(ctx, c, dn, base)
		if w != nil {
			uiWait = w
		}
		if err != nil {
			<-ctx.Done()
			uiWait()
			dn.Close()
			return err
		}
	}
	bin := executable()
	env := envServer + "=" + dn.primaryAddr(0)
	fmt.Fprintf(out, "\nthe network keeps running (data in %s). From another terminal:\n", base)
	// Its epochs hold the demo's few clients, below a client's default
	// minimum anonymity set.
	fmt.Fprintf(out, "  export RIFFLE_MIN_ANONYMITY=1 RIFFLE_NOW=1   # the demo's epochs are small; one-shot commands join at once\n")
	fmt.Fprintf(out, "  %s %s ls\n", env, bin)
	fmt.Fprintf(out, "  %s %s get -o sample.bin %s\n", env, bin, link)
	fmt.Fprintf(out, "  %s %s share FILE\n", env, bin)
	fmt.Fprintln(out, "Ctrl-C stops it and removes its data.")
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	// The UI's jobs end with ctx; the clients close after them.
	uiWait()
	return dn.Close()
}
