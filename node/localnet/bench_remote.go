package localnet

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/riffle-net/riffle/node/client"
)

// BenchClients is Bench's client half against servers running elsewhere
// (other processes or hosts): it starts cfg.Clients clients in this
// process, client i with primary addrs[i mod len(addrs)], waits for their
// epoch, has every client share cfg.Chunks chunks of random data and then
// fetch another client's file. The servers' parameters are theirs; only
// the goodputs and times are filled in (the servers' timings are not
// visible from here).
func BenchClients(ctx context.Context, addrs []string, cfg BenchConfig) (BenchResult, error) {
	if len(addrs) == 0 || cfg.Clients < 2 || cfg.Chunks < 1 {
		return BenchResult{}, fmt.Errorf("localnet: bench clients need servers, 2+ clients and 1+ chunks (got %d, %d, %d)", len(addrs), cfg.Clients, cfg.Chunks)
	}
	n := cfg.Clients
	clients := make([]*client.Client, n)
	errs := make([]error, n)
	defer func() {
		var wg sync.WaitGroup
		for _, c := range clients {
			if c != nil {
				wg.Go(func() { c.Close() })
			}
		}
		wg.Wait()
	}()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			// A benchmark network: jobs at once, whatever the anonymity set.
			clients[i], errs[i] = client.NewClient(ctx, client.ClientConfig{Server: addrs[i%len(addrs)], Logger: cfg.Logger, MinAnonymity: 1, Now: true})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return BenchResult{}, fmt.Errorf("localnet: start clients: %w", err)
	}
	var b int
	for _, c := range clients {
		cs, err := c.ChunkSize(ctx)
		if err != nil {
			return BenchResult{}, err
		}
		b = int(cs)
	}
	size := cfg.Chunks * b
	files := make([][]byte, n)
	for i := range files {
		files[i] = make([]byte, size)
		if _, err := io.ReadFull(rand.Reader, files[i]); err != nil {
			return BenchResult{}, err
		}
	}
	stop := KeepGoing(ctx, clients, cfg.Logger)
	links, shareTime, err := benchShare(ctx, clients, files)
	if err != nil {
		stop()
		return BenchResult{}, err
	}
	getTime, err := benchGet(ctx, clients, links)
	resumed := stop()
	if err != nil {
		return BenchResult{}, err
	}
	return BenchResult{Servers: len(addrs), Clients: n, ChunkSize: b, K: cfg.K, ShareTime: shareTime, GetTime: getTime, Resumed: resumed,
		UploadGoodput: float64(size) / shareTime.Seconds(), DownloadGoodput: float64(size) / getTime.Seconds()}, nil
}
