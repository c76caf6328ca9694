package node

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
	"sync/atomic"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
)

// Timing is where a server's time went (§9), summed over the rounds it
// published: opening its layer (keys, AES-CTR and GMAC, permutation),
// checking the pseudonym signatures, the store transaction, and the PIR
// answers (its own clients' and the padded ones).
type Timing struct {
	Rounds                  int
	Mix, Verify, Store, PIR time.Duration
}

// timer accumulates a server's Timing from concurrent rounds.
type timer struct {
	mix, verify, store, pir, rounds atomic.Int64
}

func (t *timer) add(field *atomic.Int64, d time.Duration) { field.Add(int64(d)) }

func (t *timer) addRound() { t.rounds.Add(1) }

// Timing returns the server's accumulated timing.
func (s *Server) Timing() Timing {
	var out Timing
	out.Rounds = int(s.timing.rounds.Load())
	out.Mix = time.Duration(s.timing.mix.Load())
	out.Verify = time.Duration(s.timing.verify.Load())
	out.Store = time.Duration(s.timing.store.Load())
	out.PIR = time.Duration(s.timing.pir.Load())
	return out
}

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

// Bench runs a network on loopback and measures goodput and round time.
func Bench(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	if cfg.Servers <= 0 {
		cfg.Servers = 3
	}
	if cfg.Clients < 2 || cfg.ChunkSize < MinChunkSize || cfg.K < 1 || cfg.Chunks < 1 {
		return BenchResult{}, fmt.Errorf("node: bench needs 2+ clients, chunk size ≥ %d, k ≥ 1 and 1+ chunks (got n=%d b=%d k=%d chunks=%d)",
			MinChunkSize, cfg.Clients, cfg.ChunkSize, cfg.K, cfg.Chunks)
	}
	dir := cfg.DataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "riffle-bench-")
		if err != nil {
			return BenchResult{}, fmt.Errorf("node: bench directory: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	m, n, b, k := cfg.Servers, cfg.Clients, cfg.ChunkSize, cfg.K
	// One epoch holds the whole run when it can: shares, fetches (k per
	// round) and slack for the cover window.
	R := min(MaxRounds, 2*cfg.Chunks+cfg.Chunks/k+16)
	p := wire.Params{ChunkSize: uint32(b), K: uint16(k), W: 2, Rounds: uint32(R), MaxClients: uint32(max(n, MinClientCap)),
		MaxRows: uint32(min(MaxRowsCap, n*k)), RegWindowMs: 500, RoundLimitMs: 120000}
	var servers []*Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	var peers []string
	for i := 0; i < m; i++ {
		s, err := NewServer(ctx, ServerConfig{DataDir: fmt.Sprintf("%s/s%d", dir, i), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: peers,
			Nick: fmt.Sprintf("bench%d", i), MinServers: m, MinClients: n, NoLAN: true, Params: p, Logger: cfg.Logger})
		if err != nil {
			return BenchResult{}, err
		}
		servers = append(servers, s)
		peers = append(peers, s.Addrs()[0].String())
	}
	clients := make([]*Client, n)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Server: servers[i%m].Addrs()[0].String(), Logger: cfg.Logger})
		if err != nil {
			return BenchResult{}, err
		}
		clients[i] = c
	}
	// Wait for the epoch, so that setup is not counted as goodput time.
	for _, c := range clients {
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
	before := make([]Timing, m)
	for i, s := range servers {
		before[i] = s.Timing()
	}
	links := make([]chunker.Link, n)
	errs := make([]error, n)
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
	shareTime := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return BenchResult{}, fmt.Errorf("node: bench share: %w", err)
	}
	start = time.Now()
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := os.MkdirTemp(dir, "get-")
			if err == nil {
				_, err = c.Get(ctx, links[(i+1)%n], d)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	getTime := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return BenchResult{}, fmt.Errorf("node: bench get: %w", err)
	}
	res := BenchResult{Servers: m, Clients: n, ChunkSize: b, K: k, ShareTime: shareTime, GetTime: getTime,
		UploadGoodput: float64(size) / shareTime.Seconds(), DownloadGoodput: float64(size) / getTime.Seconds()}
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
		return res, errors.New("node: bench ran no rounds")
	}
	res.RoundTime = (shareTime + getTime) / time.Duration(res.Rounds)
	res.ChainMix = mix
	res.Verify, res.Store, res.PIR = ver/time.Duration(m), st/time.Duration(m), pir/time.Duration(m)
	res.Other = max(0, res.RoundTime-res.ChainMix-res.Verify-res.Store-res.PIR)
	return res, nil
}
