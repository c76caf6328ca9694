package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/cmd/riffle/internal/benchreport"
)

// benchLimit is a bench's deadline in tests: a bench starts a network per
// row (two under --quic), and each may wait out a round limit when the
// machine is loaded. The benches run under --verbose, so that a failure
// shows where the network stood (lastBytes of its log).
const benchLimit = 240 * time.Second

// lastBytes is the end of a long log, at most n bytes of it, without the
// per-round stage lines (several a round, they would leave only the last
// second of a stalled run in view).
func lastBytes(s string, n int) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.Contains(line, `msg="round stage"`) && !strings.Contains(line, `msg="round stored"`) {
			b.WriteString(line)
		}
	}
	s = b.String()
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestBenchSmall runs `riffle bench` on a tiny network: the ceilings'
// line, the header, one row for n = 2 with a measured round time over at
// least two rounds and the baseline beside it, and the stages' ratios.
func TestBenchSmall(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs a loopback network")
	}
	out, errOut, err := runBinFor(t, benchLimit, cleanEnv(t), "bench", "--verbose", "--clients", "2", "--rounds", "1", "--chunk-size", "16384")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, lastBytes(errOut, 16<<10))
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "machine ceilings") || !strings.Contains(lines[2], "vs baseline") {
		t.Fatalf("bench printed:\n%s", out)
	}
	for _, c := range []string{"AES-256-GCM", "SHA-256", "XOR in cache", "memcpy", "loopback libp2p stream"} {
		if !strings.Contains(lines[0], c) {
			t.Errorf("ceilings lack %s: %q", c, lines[0])
		}
	}
	// n, three rates (number and unit each), round, five parts, rounds,
	// the baseline's rate (number and unit) and the fraction.
	f := strings.Fields(lines[3])
	if len(f) != 17 || f[0] != "2" {
		t.Fatalf("bench row %q", lines[3])
	}
	round, err := time.ParseDuration(f[7])
	if err != nil || round <= 0 {
		t.Fatalf("round %q: %v", f[7], err)
	}
	if rounds, err := strconv.Atoi(f[13]); err != nil || rounds < 2 {
		t.Fatalf("rounds %q: %v", f[13], err)
	}
	// Riffle moves fewer bytes per second than plain libp2p does.
	if frac, err := strconv.ParseFloat(f[16], 64); err != nil || frac <= 0 || frac >= 1 {
		t.Fatalf("vs baseline %q: %v", f[16], err)
	}
	for _, s := range []string{"chain mix", "verify", "store", "PIR", "network"} {
		if !strings.Contains(lines[4], s+" ") {
			t.Errorf("stages lack %s: %q", s, lines[4])
		}
	}
}

// TestBenchPaperQuick runs `riffle bench --paper --quick` into a temporary
// directory and checks that every file exists and parses: the SVG plots as
// XML with an <svg> root, data.json as the measured data with every sweep
// filled, and report.md naming each plot and the comparison with the paper.
func TestBenchPaperQuick(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs a loopback network")
	}
	dir := t.TempDir()
	// The usual binary has no plots: it says how to get them, at once.
	if _, errOut, err := runBinFor(t, time.Minute, cleanEnv(t), "bench", "--paper", "--quick", "--out", dir); err == nil || !strings.Contains(errOut, "make paper") {
		t.Errorf("bench --paper without the plots: %v %q", err, errOut)
	}
	paperBin := filepath.Join(t.TempDir(), "riffle")
	if out, err := exec.Command("go", "build", "-tags=paper", "-o", paperBin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags paper: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), benchLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, paperBin, "bench", "--paper", "--quick", "--out", dir)
	cmd.Env = cleanEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench --paper: %v\n%s", err, out)
	}
	for _, name := range benchreport.Files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(name) {
		case ".svg":
			dec := xml.NewDecoder(bytes.NewReader(b))
			root := ""
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if se, ok := tok.(xml.StartElement); ok && root == "" {
					root = se.Name.Local
				}
			}
			if root != "svg" {
				t.Errorf("%s: root element %q", name, root)
			}
		case ".json":
			var d benchreport.PaperData
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !d.Quick || len(d.ByN) != 2 || len(d.ByB) != 2 || len(d.SetupN) != 2 || len(d.SetupM) != 2 ||
				len(d.PIRQ) != 2 || len(d.PIRL) != 2 || d.Ceilings.AESGCM <= 0 || d.Ceilings.Loopback <= 0 {
				t.Errorf("data.json: %+v", d)
			}
			for _, g := range d.ByN {
				if g.Steady <= 0 || g.Baseline <= 0 || g.Rounds < 2 {
					t.Errorf("goodput point %+v", g)
				}
			}
		case ".md":
			for _, want := range []string{"## Beside the paper", "just over 100 KB/s", "## Ceilings", "| n | b |"} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("report.md lacks %q", want)
				}
			}
			for _, f := range benchreport.Files {
				if filepath.Ext(f) == ".svg" && !bytes.Contains(b, []byte("("+f+")")) {
					t.Errorf("report.md does not show %s", f)
				}
			}
		}
	}
}

// TestBenchProcesses runs `riffle bench --processes` for n = 2: three
// server processes and the clients here; the row has both goodputs, for
// each server and the clients a CPU time and a peak RSS, and the baseline
// (a plain-libp2p server process) with riffle's fraction of it in (0, 1).
func TestBenchProcesses(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs a loopback network of processes")
	}
	out, errOut, err := runBinFor(t, benchLimit, cleanEnv(t), "bench", "--verbose", "--processes", "--clients", "2", "--rounds", "1", "--chunk-size", "16384")
	if err != nil {
		t.Fatalf("bench --processes: %v\n%s%s", err, out, lastBytes(errOut, 16<<10))
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "server 2 CPU / peak RSS") {
		t.Fatalf("bench printed:\n%s", out)
	}
	// n, two rates (number and unit), wall, four "CPU / RSS unit", the
	// baseline's rate (number and unit) and the fraction.
	f := strings.Fields(lines[2])
	if len(f) != 6+4*4+3 || f[0] != "2" {
		t.Fatalf("row %q", lines[2])
	}
	if frac, err := strconv.ParseFloat(f[len(f)-1], 64); err != nil || frac <= 0 || frac >= 1 {
		t.Fatalf("vs baseline %q: %v", f[len(f)-1], err)
	}
	for i := 6; i < 6+4*4; i += 4 {
		cpu, err := time.ParseDuration(f[i])
		if err != nil || cpu < 0 || f[i+1] != "/" {
			t.Fatalf("CPU %q in %q", f[i], lines[2])
		}
		rss, err := strconv.ParseFloat(f[i+2], 64)
		if err != nil || rss <= 0 || (f[i+3] != "MiB" && f[i+3] != "GiB") {
			t.Fatalf("peak RSS %q %q in %q", f[i+2], f[i+3], lines[2])
		}
	}
}

// TestBenchProcessesNoBaseline: with --no-baseline, --processes starts no
// baseline server and prints "-" for the baseline and the fraction.
// (Before, it ran the baseline whatever the flag said.)
func TestBenchProcessesNoBaseline(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs a loopback network of processes")
	}
	out, errOut, err := runBinFor(t, benchLimit, cleanEnv(t), "bench", "--verbose", "--processes", "--no-baseline", "--clients", "2", "--rounds", "1", "--chunk-size", "16384")
	if err != nil {
		t.Fatalf("bench --processes --no-baseline: %v\n%s%s", err, out, lastBytes(errOut, 16<<10))
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("bench printed:\n%s", out)
	}
	f := strings.Fields(lines[2])
	if len(f) != 6+4*4+2 || f[0] != "2" || f[len(f)-2] != "-" || f[len(f)-1] != "-" {
		t.Fatalf("row %q", lines[2])
	}
}

// TestBenchServersBad: --servers without an address, or with one that is
// not a multiaddr, fails with one riffle: line and no row.
func TestBenchServersBad(t *testing.T) {
	for _, arg := range []string{"", "not-an-address"} {
		out, errOut, err := runBin(t, cleanEnv(t), "bench", "--servers", arg, "--clients", "2")
		if err == nil || strings.Count(errOut, "riffle: ") != 1 || strings.Contains(out, "share/client\n") {
			t.Errorf("--servers %q: err %v, stdout %q, stderr %q", arg, err, out, errOut)
		}
	}
}

// TestBenchQUIC: `riffle bench --quic` runs n over TCP and over QUIC in one
// invocation: a row for each, each row's CPU time, and the QUIC run's
// round time and CPU as positive multiples of the TCP run's.
func TestBenchQUIC(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs two loopback networks")
	}
	out, errOut, err := runBinFor(t, benchLimit, cleanEnv(t), "bench", "--verbose", "--quic", "--no-ceilings", "--no-baseline", "--clients", "2", "--rounds", "1", "--chunk-size", "16384")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, lastBytes(errOut, 16<<10))
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 || !strings.HasPrefix(strings.TrimSpace(lines[2]), "2/tcp ") || !strings.HasPrefix(strings.TrimSpace(lines[4]), "2/quic ") {
		t.Fatalf("bench printed:\n%s", out)
	}
	for _, i := range []int{3, 5} {
		var cpu float64
		if _, err := fmt.Sscanf(strings.TrimSpace(lines[i]), "cpu over share and get: %fs", &cpu); err != nil || cpu <= 0 {
			t.Fatalf("cpu line %q: %v", lines[i], err)
		}
	}
	var round, share, get, cpu float64
	if _, err := fmt.Sscanf(strings.TrimSpace(lines[6]), "quic/tcp: round time %f, share time %f, get time %f, cpu %f", &round, &share, &get, &cpu); err != nil ||
		round <= 0 || share <= 0 || get <= 0 || cpu <= 0 {
		t.Fatalf("ratio line %q: %v", lines[6], err)
	}
}
