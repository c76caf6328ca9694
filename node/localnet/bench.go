package localnet

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
)

// BenchConfig sets up a benchmark network on loopback in this process:
// Servers servers (default 3) and Clients clients, chunk size ChunkSize
// and K request slots; every client shares Chunks chunks of random data,
// then fetches another client's file.
type BenchConfig struct {
	Servers   int
	Clients   int
	ChunkSize int
	K         int
	Chunks    int
	// QUIC makes the servers listen on QUIC only (on TCP only otherwise),
	// so that every connection of the run is of one transport.
	QUIC bool
	// Interval is the group pace (0: the floor, node.MinRoundIntervalMs,
	// so that the run measures the machine rather than the pace).
	Interval time.Duration
	// DataDir holds the servers' stores (a temporary directory if empty).
	DataDir string
	Logger  *slog.Logger
}

// BenchResult is what Bench measured. Goodputs are bytes of chunk payload
// per client per second; the per-round figures are means per server and
// round, except ChainMix, the sum over the chain (its layers run one after
// the other). Other is the round time not spent in the chain's mixing nor
// in one server's verify, store and PIR: network and waiting (PIR of round
// r overlaps the mixing of r+1, so it may be zero).
type BenchResult struct {
	Servers, Clients, ChunkSize, K int
	Rounds                         int
	ShareTime, GetTime             time.Duration
	UploadGoodput                  float64
	DownloadGoodput                float64
	RoundTime                      time.Duration
	ChainMix, Verify, Store, PIR   time.Duration
	Other                          time.Duration
	// CPU is this process's CPU time (user and system; servers and
	// clients alike) over the shares and the gets.
	CPU time.Duration
	// Resumed counts the jobs that paused and that the bench let go on
	// (KeepGoing); their pause is in the goodputs.
	Resumed int
}

// String is a one-paragraph report.
func (r BenchResult) String() string {
	return fmt.Sprintf("m=%d n=%d b=%d KiB k=%d: upload %.1f KiB/s per client (%s), download %.1f KiB/s per client (%s); "+
		"round %s: chain mixing %s, verify %s, store %s, PIR %s, network and waiting %s (%d rounds)",
		r.Servers, r.Clients, r.ChunkSize>>10, r.K, r.UploadGoodput/1024, r.ShareTime.Round(time.Millisecond),
		r.DownloadGoodput/1024, r.GetTime.Round(time.Millisecond), r.RoundTime.Round(time.Microsecond),
		r.ChainMix.Round(time.Microsecond), r.Verify.Round(time.Microsecond), r.Store.Round(time.Microsecond),
		r.PIR.Round(time.Microsecond), r.Other.Round(time.Microsecond), r.Rounds)
}

// benchRoundLimit is the round limit of a bench: room for a round's PIR
// work at a slow 100 MB/s of XOR, three times over, between 15 s and 120 s.
// A lost round under load then costs seconds on a small network, not the
// two minutes that the largest ones need.
func benchRoundLimit(n, k, b int) time.Duration {
	L, capN := min(node.MaxRowsCap, n*k), max(n, node.MinClientCap)
	work := float64(L) / 8 * float64(256+capN*k) * float64(b)
	d := time.Duration(3 * work / 1e8 * float64(time.Second))
	return min(max(d, 15*time.Second), 120*time.Second)
}

// Bench runs a network on loopback and measures goodput and round time.
func Bench(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	if cfg.Servers <= 0 {
		cfg.Servers = DefaultServers
	}
	if cfg.Clients < 2 || cfg.ChunkSize < node.MinChunkSize || cfg.K < 1 || cfg.Chunks < 1 {
		return BenchResult{}, fmt.Errorf("localnet: bench needs 2+ clients, chunk size ≥ %d, k ≥ 1 and 1+ chunks (got n=%d b=%d k=%d chunks=%d)",
			node.MinChunkSize, cfg.Clients, cfg.ChunkSize, cfg.K, cfg.Chunks)
	}
	m, n, b, k := cfg.Servers, cfg.Clients, cfg.ChunkSize, cfg.K
	// One epoch holds the whole run when it can: shares, fetches (k per
	// round) and slack for the cover window.
	R := min(node.MaxRounds, 2*cfg.Chunks+cfg.Chunks/k+16)
	p := node.Params{ChunkSize: uint32(b), K: uint16(k), W: 2, Rounds: uint32(R), MaxClients: uint32(max(n, node.MinClientCap)),
		MaxRows: uint32(min(node.MaxRowsCap, n*k)), RegWindowMs: 500, RoundLimitMs: uint32(benchRoundLimit(n, k, b) / time.Millisecond),
		RoundIntervalMs: uint32(max(cfg.Interval.Milliseconds(), node.MinRoundIntervalMs))}
	nc := Config{Servers: m, Clients: n, Params: p, Dir: cfg.DataDir, Nick: "bench", Logger: cfg.Logger}
	if cfg.QUIC {
		nc.Server = func(_ int, sc *node.ServerConfig) { sc.Listen = []string{loopbackQUIC} }
	}
	net, err := Start(ctx, nc)
	if err != nil {
		return BenchResult{}, err
	}
	defer net.Close()
	// Wait for the epoch, so that setup is not counted as goodput time.
	for _, c := range net.Clients {
		if _, err := c.ChunkSize(ctx); err != nil {
			return BenchResult{}, err
		}
	}
	size := cfg.Chunks * b
	files := make([][]byte, n)
	for i := range files {
		files[i] = make([]byte, size)
		if _, err := io.ReadFull(rand.Reader, files[i]); err != nil {
			return BenchResult{}, err
		}
	}
	before := make([]node.Timing, m)
	for i, s := range net.Servers {
		before[i] = s.Timing()
	}
	cpu0 := processCPU()
	stop := KeepGoing(ctx, net.Clients, cfg.Logger)
	links, shareTime, err := benchShare(ctx, net.Clients, files)
	if err != nil {
		stop()
		return BenchResult{}, err
	}
	getTime, err := benchGet(ctx, net.Clients, links)
	resumed := stop()
	if err != nil {
		return BenchResult{}, err
	}
	cpu := processCPU() - cpu0
	res := BenchResult{Servers: m, Clients: n, ChunkSize: b, K: k, ShareTime: shareTime, GetTime: getTime, CPU: cpu, Resumed: resumed,
		UploadGoodput: float64(size) / shareTime.Seconds(), DownloadGoodput: float64(size) / getTime.Seconds()}
	if err := res.addTimings(net.Servers, before); err != nil {
		return res, err
	}
	return res, nil
}

// benchShare has every client share its file at once; it returns the links
// and the time until the last share ended.
func benchShare(ctx context.Context, clients []*client.Client, files [][]byte) ([]chunker.Link, time.Duration, error) {
	links := make([]chunker.Link, len(clients))
	errs := make([]error, len(clients))
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			links[i], errs[i] = c.Share(ctx, bytes.NewReader(files[i]), fmt.Sprintf("bench%d.bin", i), false)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, fmt.Errorf("localnet: bench share: %w", err)
	}
	return links, time.Since(start), nil
}

// benchGet has client i fetch the file of client i+1, all at once, each
// into a temporary directory; it returns the time until the last ended.
func benchGet(ctx context.Context, clients []*client.Client, links []chunker.Link) (time.Duration, error) {
	n := len(clients)
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := os.MkdirTemp("", "riffle-get-")
			if err == nil {
				defer os.RemoveAll(d)
				_, err = c.Get(ctx, links[(i+1)%n], d)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("localnet: bench get: %w", err)
	}
	return time.Since(start), nil
}

// addTimings fills in the per-round figures from the servers' timing since
// before.
func (res *BenchResult) addTimings(servers []*node.Server, before []node.Timing) error {
	var mix, ver, st, pir time.Duration
	for i, s := range servers {
		t := s.Timing()
		rounds := t.Rounds - before[i].Rounds
		if rounds <= 0 {
			continue
		}
		res.Rounds = max(res.Rounds, rounds)
		mix += (t.Mix - before[i].Mix) / time.Duration(rounds)
		ver += (t.Verify - before[i].Verify) / time.Duration(rounds)
		st += (t.Store - before[i].Store) / time.Duration(rounds)
		pir += (t.PIR - before[i].PIR) / time.Duration(rounds)
	}
	if res.Rounds == 0 {
		return errors.New("localnet: bench ran no rounds")
	}
	m := time.Duration(len(servers))
	res.RoundTime = (res.ShareTime + res.GetTime) / time.Duration(res.Rounds)
	res.ChainMix = mix
	res.Verify, res.Store, res.PIR = ver/m, st/m, pir/m
	res.Other = max(0, res.RoundTime-res.ChainMix-res.Verify-res.Store-res.PIR)
	return nil
}

// processCPU is this process's user plus system CPU time so far (zero if
// the system does not tell).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
