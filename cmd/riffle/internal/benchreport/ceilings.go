// Package benchreport measures the machine riffle is benchmarked on and
// writes `riffle bench` reports: the ceilings each stage of a round is
// held to (AES-GCM, SHA-256, XOR in cache, memcpy, a loopback libp2p
// stream), each stage's ratio to its ceiling, and the paper-style report
// of docs/bench/paper (Markdown and SVG plots).
package benchreport

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/localnet"
)

// Sizes of the ceiling measurements.
const (
	// ceilBuf is the buffer of the AES-GCM, SHA-256 and memcpy runs: one
	// default chunk (256 KiB), larger than L1/L2, as a chunk is.
	ceilBuf = 256 << 10
	// xorBuf is the XOR buffer: 64 KiB, which stays in cache, the PIR
	// engine's working set.
	xorBuf = 64 << 10
	// memcpyBuf is the memcpy buffer: 32 MiB, out of cache, as a round's
	// payloads are.
	memcpyBuf = 32 << 20
	// loopBytes is what the loopback stream moves one way.
	loopBytes = 64 << 20
	// loopFrame is the write size on the loopback stream.
	loopFrame = 256 << 10
)

// Ceilings are the machine's throughputs in bytes per second, each
// measured with one goroutine per core (GOMAXPROCS) except the loopback
// stream, which is one stream.
type Ceilings struct {
	Cores    int
	AESGCM   float64 // AES-256-GCM seal
	SHA256   float64
	XOR      float64 // crypto/subtle.XORBytes in cache
	Memcpy   float64 // copy out of cache
	Loopback float64 // one libp2p stream over TCP+TLS+yamux on 127.0.0.1
}

// Rows are the ceilings as (name, bytes/s) in a fixed order.
func (c Ceilings) Rows() [][2]any {
	return [][2]any{{"AES-256-GCM", c.AESGCM}, {"SHA-256", c.SHA256}, {"XOR in cache", c.XOR},
		{"memcpy (out of cache)", c.Memcpy}, {"loopback libp2p stream", c.Loopback}}
}

// parallel runs f on every core for about d and returns the bytes per
// second of all together; f processes per bytes each call.
func parallel(d time.Duration, per int, setup func() func()) float64 {
	cores := runtime.GOMAXPROCS(0)
	fs := make([]func(), cores)
	for i := range fs {
		fs[i] = setup()
		fs[i]() // warm: page in the buffers before the clock starts
	}
	var wg sync.WaitGroup
	counts := make([]int, cores)
	start := time.Now()
	for i, f := range fs {
		wg.Go(func() {
			// At least one batch each, however late the goroutine starts.
			for {
				for range 4 {
					f()
				}
				counts[i] += 4
				if time.Since(start) >= d {
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	total := 0
	for _, c := range counts {
		total += c
	}
	return float64(total*per) / el
}

// Measure measures the ceilings, each for about d (the loopback stream
// moves a fixed 64 MiB).
func Measure(ctx context.Context, d time.Duration) (Ceilings, error) {
	c := Ceilings{Cores: runtime.GOMAXPROCS(0)}
	c.AESGCM = parallel(d, ceilBuf, func() func() {
		var key [32]byte
		blk, _ := aes.NewCipher(key[:])
		g, _ := cipher.NewGCM(blk)
		buf := make([]byte, ceilBuf, ceilBuf+16)
		nonce := make([]byte, 12)
		return func() { g.Seal(buf[:0], nonce, buf[:ceilBuf], nil) }
	})
	c.SHA256 = parallel(d, ceilBuf, func() func() {
		buf := make([]byte, ceilBuf)
		return func() { sha256.Sum256(buf) }
	})
	c.XOR = parallel(d, xorBuf, func() func() {
		x, y := make([]byte, xorBuf), make([]byte, xorBuf)
		return func() { subtle.XORBytes(x, x, y) }
	})
	c.Memcpy = parallel(d, memcpyBuf, func() func() {
		x, y := make([]byte, memcpyBuf), make([]byte, memcpyBuf)
		return func() { copy(x, y) }
	})
	var err error
	if c.Loopback, err = loopback(ctx); err != nil {
		return c, err
	}
	return c, nil
}

const loopProto = "/riffle-bench/loopback/1"

// loopback moves loopBytes over one libp2p stream between two hosts of
// this process and returns bytes per second.
func loopback(ctx context.Context) (float64, error) {
	srv, err := localnet.NewPlainHost(true)
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	done := make(chan error, 1)
	srv.SetStreamHandler(loopProto, func(s network.Stream) {
		n, err := io.Copy(io.Discard, io.LimitReader(s, loopBytes+1)) // bounded: one byte more shows an overrun
		if err == nil && n != loopBytes {
			err = fmt.Errorf("loopback: got %d bytes, want %d", n, loopBytes)
		}
		s.Write([]byte{1}) // the receiver's acknowledgement ends the timing
		s.Close()
		done <- err
	})
	cl, err := localnet.NewPlainHost(false)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := cl.Connect(ctx, peer.AddrInfo{ID: srv.ID(), Addrs: srv.Addrs()}); err != nil {
		return 0, fmt.Errorf("loopback: %w", err)
	}
	s, err := cl.NewStream(ctx, srv.ID(), loopProto)
	if err != nil {
		return 0, fmt.Errorf("loopback: %w", err)
	}
	buf := make([]byte, loopFrame)
	rand.Read(buf)
	start := time.Now()
	for sent := 0; sent < loopBytes; sent += loopFrame {
		if _, err := s.Write(buf); err != nil {
			return 0, fmt.Errorf("loopback: %w", err)
		}
	}
	if err := s.CloseWrite(); err != nil {
		return 0, fmt.Errorf("loopback: %w", err)
	}
	if _, err := io.ReadFull(s, buf[:1]); err != nil {
		return 0, fmt.Errorf("loopback: %w", err)
	}
	el := time.Since(start)
	s.Close()
	if err := <-done; err != nil {
		return 0, err
	}
	return loopBytes / el.Seconds(), nil
}

// Stage is one stage of a round held to a ceiling: Rate is the bytes per
// second the stage processed (Bytes over Time) and Ratio its fraction of
// the ceiling.
type Stage struct {
	Name, Ceiling, Formula string
	Bytes                  float64
	Time                   time.Duration
	Rate, Ratio            float64
}

// Round is what a round's stages measured, per server and round except
// ChainMix (the sum over the chain's m layers).
type Round struct {
	Servers, Clients, ChunkSize, K int
	ChainMix, Verify, Store, PIR   time.Duration
	Other                          time.Duration
}

// Stages holds each stage of r to its ceiling. The bytes of each stage:
// mixing opens m layers of n onions of b bytes (AES-CTR + GMAC, held to
// AES-GCM); a server's verify hashes n payloads (SHA-256); its store writes
// n chunks (memcpy); its PIR answers Q = n·k queries over L = n rows, whose
// reference XOR volume is Q·L/2·b (XOR in cache; the engine does less than
// the reference, so its ratio may pass 1); the network moves each client's
// onion up and its k answers down, n·b·(1+k) bytes, in the rest of the
// round (one loopback stream).
func Stages(r Round, c Ceilings) []Stage {
	m, n, b, k := float64(r.Servers), float64(r.Clients), float64(r.ChunkSize), float64(r.K)
	st := []Stage{
		{Name: "chain mix", Ceiling: "AES-256-GCM", Formula: "m·n·b", Bytes: m * n * b, Time: r.ChainMix},
		{Name: "verify", Ceiling: "SHA-256", Formula: "n·b", Bytes: n * b, Time: r.Verify},
		{Name: "store", Ceiling: "memcpy", Formula: "n·b", Bytes: n * b, Time: r.Store},
		{Name: "PIR", Ceiling: "XOR in cache", Formula: "n·k·n/2·b", Bytes: n * k * n / 2 * b, Time: r.PIR},
		{Name: "network", Ceiling: "loopback stream", Formula: "n·b·(1+k)", Bytes: n * b * (1 + k), Time: r.Other},
	}
	ceil := map[string]float64{"AES-256-GCM": c.AESGCM, "SHA-256": c.SHA256, "XOR in cache": c.XOR, "memcpy": c.Memcpy, "loopback stream": c.Loopback}
	for i := range st {
		if st[i].Time > 0 {
			st[i].Rate = st[i].Bytes / st[i].Time.Seconds()
		}
		if cl := ceil[st[i].Ceiling]; cl > 0 {
			st[i].Ratio = st[i].Rate / cl
		}
	}
	return st
}
