package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/cmd/riffle/internal/benchreport"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/localnet"
)

// procServers is the chain length of --processes, as in the in-process
// bench.
const procServers = localnet.DefaultServers

// procAddrWait bounds the wait for a server process to write its address.
const procAddrWait = 60 * time.Second

// serverProc is one `riffle server` child.
type serverProc struct {
	cmd  *exec.Cmd
	addr string
	log  *os.File
}

// runBenchProcesses is `riffle bench --processes`: for each n, 3 servers
// as separate processes (this binary's `riffle server` on 127.0.0.1, no
// mDNS) and the n clients in this process; it reports the goodputs and
// each server's CPU time and peak RSS from /proc.
func runBenchProcesses(ctx context.Context, c *cli.Context, counts []int, chunks, b, k int) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("processes: %w", err)
	}
	out := stdout(c)
	fmt.Fprintf(out, "riffle bench --processes: %d servers, each its own process (riffle server on 127.0.0.1, no mDNS); the clients in this process (pid %d); b = %d B, k = %d, every client shares %d chunks then fetches a file\n",
		procServers, os.Getpid(), b, k, chunks)
	const rowFmt = "%5v %13v %13v %9v %24v %24v %24v %24v %15v %12v\n"
	fmt.Fprintf(out, rowFmt, "n", "share/client", "get/client", "wall", "server 0 CPU / peak RSS", "server 1 CPU / peak RSS", "server 2 CPU / peak RSS", "clients CPU / peak RSS", "baseline/client", "vs baseline")
	for _, n := range counts {
		if n > int(node.DefaultParams().MaxClients) {
			return fmt.Errorf("--processes: n = %d above the servers' client cap %d", n, node.DefaultParams().MaxClients)
		}
		row, err := benchProcessesOnce(ctx, self, n, chunks, b, k, !c.Bool("no-baseline"), serverProfiles(c, n))
		if err != nil {
			return fmt.Errorf("processes n = %d: %w", n, err)
		}
		fmt.Fprintf(out, rowFmt, row...)
	}
	return nil
}

// serverProfiles is what server i adds to its command line for the
// bench's --cpuprofile and --memprofile: its own files, FILE.nN.sI.
func serverProfiles(c *cli.Context, n int) func(i int) []string {
	return func(i int) []string {
		var args []string
		for _, f := range []string{"cpuprofile", "memprofile"} {
			if p := c.String(f); p != "" {
				args = append(args, "--"+f, fmt.Sprintf("%s.n%d.s%d", p, n, i))
			}
		}
		return args
	}
}

func benchProcessesOnce(ctx context.Context, self string, n, chunks, b, k int, baseline bool, profiles func(i int) []string) ([]any, error) {
	dir, err := os.MkdirTemp("", "riffle-procs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	R := min(node.MaxRounds, 2*chunks+chunks/k+16)
	var procs []*serverProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	var addrs []string
	start := time.Now()
	for i := range procServers {
		data := filepath.Join(dir, fmt.Sprintf("s%d", i))
		args := []string{"server", "--data", data, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--nick", fmt.Sprintf("p%d", i),
			"--min-servers", strconv.Itoa(procServers), "--min-clients", strconv.Itoa(n),
			"--chunk-size", strconv.Itoa(b), "--k", strconv.Itoa(k), "--rounds", strconv.Itoa(R),
			"--reg-window", "500ms", "--round-limit", "2m",
			// The floor of the pace, as in the in-process bench: the run
			// measures the machine, not the group pace.
			"--round-interval", fmt.Sprintf("%dms", node.MinRoundIntervalMs)}
		for _, a := range addrs {
			args = append(args, "--peer", a)
		}
		args = append(args, profiles(i)...)
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("s%d.log", i)))
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			return nil, fmt.Errorf("start server %d: %w", i, err)
		}
		p := &serverProc{cmd: cmd, log: logf}
		procs = append(procs, p)
		if p.addr, err = waitAddr(ctx, data, cmd); err != nil {
			return nil, fmt.Errorf("server %d: %w%s", i, err, tail(logf.Name()))
		}
		addrs = append(addrs, p.addr)
	}
	self0, err := benchreport.ReadProc(0)
	if err != nil {
		return nil, err
	}
	r, err := localnet.BenchClients(ctx, addrs, localnet.BenchConfig{Clients: n, K: k, Chunks: chunks})
	if err != nil {
		return nil, err
	}
	wall := time.Since(start)
	row := []any{n, humanBytes(uint64(r.UploadGoodput)) + "/s", humanBytes(uint64(r.DownloadGoodput)) + "/s", wall.Round(100 * time.Millisecond)}
	for i, p := range procs {
		st, err := benchreport.ReadProc(p.cmd.Process.Pid)
		if err != nil {
			return nil, fmt.Errorf("server %d: %w", i, err)
		}
		row = append(row, fmt.Sprintf("%.1fs / %s", st.CPU.Seconds(), humanBytes(st.PeakRSS)))
	}
	self1, err := benchreport.ReadProc(0)
	if err != nil {
		return nil, err
	}
	// The client process's peak is over its whole life (all n so far).
	row = append(row, fmt.Sprintf("%.1fs / %s", (self1.CPU-self0.CPU).Seconds(), humanBytes(self1.PeakRSS)))
	for _, p := range procs {
		p.stop()
	}
	procs = nil
	if !baseline {
		return append(row, "-", "-"), nil
	}
	// The baseline between the same kinds of processes: a plain-libp2p
	// server process and this one, moving each client's file up and a
	// file down (chunks rounds of b each way).
	bl, err := baselineProcess(ctx, self, n, r.ChunkSize, chunks)
	if err != nil {
		return nil, err
	}
	row = append(row, humanBytes(uint64(bl.Goodput))+"/s", fmt.Sprintf("%.3g", bl.Time.Seconds()/(r.ShareTime+r.GetTime).Seconds()))
	return row, nil
}

// baselineProcess runs `riffle bench --baseline-serve` as a process and
// the baseline's clients here against it.
func baselineProcess(ctx context.Context, self string, n, b, rounds int) (localnet.BaselineResult, error) {
	cmd := exec.Command(self, "bench", "--baseline-serve", "--chunk-size", strconv.Itoa(b))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return localnet.BaselineResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return localnet.BaselineResult{}, fmt.Errorf("baseline server: %w", err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(io.LimitReader(stdout, 4096)).ReadString('\n')
	if err != nil {
		return localnet.BaselineResult{}, fmt.Errorf("baseline server: no address: %w", err)
	}
	ai, err := peer.AddrInfoFromString(strings.TrimSpace(line))
	if err != nil {
		return localnet.BaselineResult{}, fmt.Errorf("baseline server: address %q: %w", line, err)
	}
	return localnet.BaselineClients(ctx, *ai, n, b, rounds)
}

// runBaselineServe is `riffle bench --baseline-serve`: a plain-libp2p
// baseline server on 127.0.0.1 until SIGINT or SIGTERM; its address is
// the first line on stdout.
func runBaselineServe(ctx context.Context, c *cli.Context, b int) error {
	h, err := localnet.NewPlainHost(true)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := localnet.ServeBaseline(h, b); err != nil {
		return err
	}
	fmt.Fprintf(stdout(c), "%s/p2p/%s\n", h.Addrs()[0], h.ID())
	<-ctx.Done()
	return nil
}

// waitAddr waits for a server's address file and returns its 127.0.0.1
// TCP address.
func waitAddr(ctx context.Context, data string, cmd *exec.Cmd) (string, error) {
	exited := make(chan struct{})
	go func() {
		// Detect an early exit without reaping the process (stop waits).
		for {
			if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
				close(exited)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	deadline := time.After(procAddrWait)
	for {
		if b, err := os.ReadFile(filepath.Join(data, addrsFile)); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "/ip4/127.0.0.1/tcp/") {
					return l, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-exited:
			return "", errors.New("exited before listening")
		case <-deadline:
			return "", fmt.Errorf("no address after %v", procAddrWait)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM, waits up to 30 s, then kills.
func (p *serverProc) stop() {
	defer p.log.Close()
	if p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// tail is the last lines of a server's log, for an error.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 5 {
			lines = lines[1:]
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "; its log ends:\n" + strings.Join(lines, "\n")
}

// runBenchRemote is `riffle bench --servers A,B,C`: only the clients, in
// this process, against servers running elsewhere (make netns runs one per
// group of clients, each in its own network namespace). Every count in
// --clients is one run; the epoch parameters are the servers'.
func runBenchRemote(ctx context.Context, c *cli.Context, counts []int, chunks, k int) error {
	var addrs []string
	for _, a := range strings.Split(c.String("servers"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return fmt.Errorf("--servers: give the servers' multiaddrs with /p2p/, comma-separated")
	}
	out := stdout(c)
	fmt.Fprintf(out, "riffle bench --servers: the clients only, against %d servers; every client shares %d chunks then fetches a file\n", len(addrs), chunks)
	const rowFmt = "%5v %13v %13v %9v\n"
	fmt.Fprintf(out, rowFmt, "n", "share/client", "get/client", "wall")
	for _, n := range counts {
		start := time.Now()
		r, err := localnet.BenchClients(ctx, addrs, localnet.BenchConfig{Clients: n, K: k, Chunks: chunks, Logger: logger(c)})
		if err != nil {
			return fmt.Errorf("bench --servers n = %d: %w", n, err)
		}
		noteResumed(c, fmt.Sprintf("n = %d", n), r)
		fmt.Fprintf(out, rowFmt, n, humanBytes(uint64(r.UploadGoodput))+"/s", humanBytes(uint64(r.DownloadGoodput))+"/s", time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}
