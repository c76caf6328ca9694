package benchreport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/riffle-net/riffle/node/localnet"
)

// PaperConfig sets what Paper measures and where it writes.
type PaperConfig struct {
	Out      string // output directory, created if missing
	Quick    bool   // tiny sizes, seconds in all (for tests)
	Setup10k bool   // also time setup at n = 10,000
	Command  string // the command line, quoted in the report
	Note     string // a paragraph on the machine, e.g. what else ran on it
	Logger   *slog.Logger
	Progress io.Writer // one line per measurement (nil: none)
}

// GoodputPoint is one `riffle bench` row with its baseline.
type GoodputPoint struct {
	Clients, ChunkSize, K, Chunks, Rounds int
	Share, Get, Steady, Baseline          float64 // bytes per client per second
	Round                                 Round
	RoundTime                             time.Duration
}

// PaperData is everything a paper run measured; data.json holds it.
type PaperData struct {
	Machine  Machine
	Ceilings Ceilings
	Quick    bool
	ByN      []GoodputPoint
	ByB      []GoodputPoint
	SetupN   []SetupPoint
	SetupM   []SetupPoint
	PIRQ     []PIRPoint
	PIRL     []PIRPoint
	Elapsed  time.Duration
	Command  string
	Note     string
}

// paperSizes are the sweeps of a paper run.
type paperSizes struct {
	ns        []int // goodput vs n
	b, chunks int
	bn        int   // n of the goodput-vs-b sweep
	bs        []int // its chunk sizes
	setupNs   []int // setup vs n at m = 3
	setupMs   []int // setup vs m at n = setupMn
	setupMn   int
	pirFix    int   // L of the Q sweep and Q of the L sweep
	pirSweep  []int // Q or L
	pirB      int
}

func sizesFor(cfg PaperConfig) paperSizes {
	if cfg.Quick {
		return paperSizes{ns: []int{2, 3}, b: 16 << 10, chunks: 1, bn: 2, bs: []int{16 << 10, 32 << 10},
			setupNs: []int{4, 8}, setupMs: []int{2, 3}, setupMn: 4, pirFix: 16, pirSweep: []int{8, 16}, pirB: 4 << 10}
	}
	s := paperSizes{ns: []int{16, 32, 64, 128, 200}, b: 256 << 10, chunks: 3, bn: 64,
		bs:      []int{16 << 10, 64 << 10, 256 << 10, 1 << 20},
		setupNs: []int{100, 200, 500, 1000}, setupMs: []int{2, 3, 5}, setupMn: 500,
		pirFix: 200, pirSweep: []int{25, 50, 100, 200}, pirB: 256 << 10}
	if cfg.Setup10k {
		s.setupNs = append(s.setupNs, 10000)
	}
	return s
}

// Paper measures the paper's figures on this machine and writes into
// cfg.Out: report.md, data.json and the SVG plots.
func Paper(ctx context.Context, cfg PaperConfig) (PaperData, error) {
	if !PlotsBuilt {
		// Say so before minutes of measuring, not after.
		return PaperData{}, plots("", PaperData{})
	}
	start := time.Now()
	sz := sizesFor(cfg)
	d := PaperData{Machine: DescribeMachine(), Quick: cfg.Quick, Command: cfg.Command, Note: cfg.Note}
	say := func(format string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "paper: "+format+"\n", a...)
		}
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return d, fmt.Errorf("paper: %w", err)
	}
	var err error
	ceilFor := 300 * time.Millisecond
	if cfg.Quick {
		ceilFor = 20 * time.Millisecond
	}
	if d.Ceilings, err = Measure(ctx, ceilFor); err != nil {
		return d, err
	}
	say("ceilings measured")
	run := func(n, b int) (GoodputPoint, error) {
		r, err := localnet.Bench(ctx, localnet.BenchConfig{Clients: n, ChunkSize: b, K: 1, Chunks: sz.chunks, Logger: cfg.Logger})
		if err != nil {
			return GoodputPoint{}, fmt.Errorf("bench n = %d b = %d: %w", n, b, err)
		}
		bl, err := localnet.Baseline(ctx, n, b, r.Rounds)
		if err != nil {
			return GoodputPoint{}, fmt.Errorf("baseline n = %d b = %d: %w", n, b, err)
		}
		p := GoodputPoint{Clients: n, ChunkSize: b, K: 1, Chunks: sz.chunks, Rounds: r.Rounds,
			Share: r.UploadGoodput, Get: r.DownloadGoodput, Steady: float64(b) / r.RoundTime.Seconds(), Baseline: bl.Goodput,
			RoundTime: r.RoundTime, Round: Round{Servers: r.Servers, Clients: n, ChunkSize: b, K: 1,
				ChainMix: r.ChainMix, Verify: r.Verify, Store: r.Store, PIR: r.PIR, Other: r.Other}}
		say("n = %d b = %d: steady %.0f B/s per client, baseline %.0f B/s", n, b, p.Steady, p.Baseline)
		return p, nil
	}
	for _, n := range sz.ns {
		p, err := run(n, sz.b)
		if err != nil {
			return d, err
		}
		d.ByN = append(d.ByN, p)
	}
	for _, b := range sz.bs {
		var p GoodputPoint
		reused := false
		for _, q := range d.ByN {
			if q.Clients == sz.bn && q.ChunkSize == b {
				p, reused = q, true
			}
		}
		if !reused {
			if p, err = run(sz.bn, b); err != nil {
				return d, err
			}
		}
		d.ByB = append(d.ByB, p)
	}
	for _, n := range sz.setupNs {
		p, err := MeasureSetup(3, n)
		if err != nil {
			return d, fmt.Errorf("setup m = 3 n = %d: %w", n, err)
		}
		say("setup m = 3 n = %d: critical path %v", n, p.Critical.Round(time.Millisecond))
		d.SetupN = append(d.SetupN, p)
	}
	for _, m := range sz.setupMs {
		p, err := MeasureSetup(m, sz.setupMn)
		if err != nil {
			return d, fmt.Errorf("setup m = %d n = %d: %w", m, sz.setupMn, err)
		}
		say("setup m = %d n = %d: critical path %v", m, sz.setupMn, p.Critical.Round(time.Millisecond))
		d.SetupM = append(d.SetupM, p)
	}
	for _, q := range sz.pirSweep {
		p, err := MeasurePIR(ctx, q, sz.pirFix, sz.pirB)
		if err != nil {
			return d, fmt.Errorf("pir Q = %d: %w", q, err)
		}
		say("PIR Q = %d L = %d: engine %.0f answers/s, reference %.0f", q, sz.pirFix, p.Engine, p.Reference)
		d.PIRQ = append(d.PIRQ, p)
	}
	for _, l := range sz.pirSweep {
		p, err := MeasurePIR(ctx, sz.pirFix, l, sz.pirB)
		if err != nil {
			return d, fmt.Errorf("pir L = %d: %w", l, err)
		}
		say("PIR Q = %d L = %d: engine %.0f answers/s, reference %.0f", sz.pirFix, l, p.Engine, p.Reference)
		d.PIRL = append(d.PIRL, p)
	}
	d.Machine.LoadEnd = LoadAvg()
	d.Elapsed = time.Since(start)
	if err := Write(cfg.Out, d); err != nil {
		return d, err
	}
	return d, nil
}

// Files are the names Write creates in its directory.
var Files = []string{"report.md", "data.json", "goodput_n.svg", "goodput_b.svg", "setup_n.svg", "setup_m.svg",
	"pir_q.svg", "pir_l.svg", "round_split.svg"}

// Write writes d's report, data and plots into dir.
func Write(dir string, d PaperData) error {
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "data.json"), js, 0o644); err != nil {
		return fmt.Errorf("paper: %w", err)
	}
	if err := plots(dir, d); err != nil {
		return fmt.Errorf("paper: plots: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return fmt.Errorf("paper: %w", err)
	}
	if err := report(f, d); err != nil {
		f.Close()
		return fmt.Errorf("paper: report: %w", err)
	}
	return f.Close()
}
