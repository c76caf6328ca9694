package localnet

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkNetwork runs Bench: 3 servers on loopback, n clients, each
// sharing RIFFLE_BENCH_CHUNKS chunks (default 8) and fetching another's
// file. Sizes: n ∈ {8, 16} and b = 16 KiB by default; RIFFLE_LONG=1 adds
// n ∈ {16, 64} at b = 256 KiB. Reported per client: upload and download
// goodput (B/s) and per round the time of each part (ms).
func BenchmarkNetwork(b *testing.B) {
	chunks := 8
	if v, err := strconv.Atoi(os.Getenv("RIFFLE_BENCH_CHUNKS")); err == nil && v > 0 {
		chunks = v
	}
	type size struct{ n, b, k int }
	sizes := []size{{8, 16 << 10, 2}, {16, 16 << 10, 2}}
	if os.Getenv("RIFFLE_LONG") != "" {
		sizes = append(sizes, size{16, 256 << 10, 2}, size{64, 256 << 10, 2})
	}
	for _, sz := range sizes {
		b.Run(fmt.Sprintf("n=%d/b=%dKiB/k=%d", sz.n, sz.b>>10, sz.k), func(b *testing.B) {
			var last BenchResult
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				res, err := Bench(ctx, BenchConfig{Clients: sz.n, ChunkSize: sz.b, K: sz.k, Chunks: chunks, DataDir: b.TempDir()})
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				last = res
			}
			b.ReportMetric(last.UploadGoodput, "up-B/s/client")
			b.ReportMetric(last.DownloadGoodput, "down-B/s/client")
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(ms(last.RoundTime), "round-ms")
			b.ReportMetric(ms(last.ChainMix), "mix-ms")
			b.ReportMetric(ms(last.Verify), "verify-ms")
			b.ReportMetric(ms(last.Store), "store-ms")
			b.ReportMetric(ms(last.PIR), "pir-ms")
			b.ReportMetric(ms(last.Other), "net-ms")
			b.Log(last)
		})
	}
}
