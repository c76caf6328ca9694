package node_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	nodetest.Virtual(t, func(t *testing.T, net *memnet.Net) { endToEnd(t, net) })
}

func TestEndToEndLibp2p(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	node.Long(t)
	endToEnd(t, nil)
}

func endToEnd(t *testing.T, net transport.Network) {
	tn := nodetest.New(t, nodetest.Config{Servers: 3, Clients: 8, Params: node.TestParams(64), Network: net})
	// In virtual time 3 minutes bound the protocol; on libp2p the
	// machine's load decides (nodetest.RealTime).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	if net == nil {
		cancel()
		ctx, cancel = nodetest.RealTime(t, 3*time.Minute)
	}
	defer cancel()
	sizes := []int{0, 1, 16 << 10, 16<<10 + 1}
	if !testing.Short() {
		sizes = append(sizes, 3<<20)
	}
	type res struct {
		data []byte
		path string
		id   [32]byte // the file id of the link
		err  error
	}
	var wg sync.WaitGroup
	out := make([]res, len(sizes))
	for i, size := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := nodetest.RandBytes(t, size)
			up := tn.Clients[i%len(tn.Clients)]
			down := tn.Clients[(i+3)%len(tn.Clients)]
			link, err := up.Share(ctx, bytes.NewReader(data), fmt.Sprintf("f%d.bin", size), i == 2)
			if err != nil {
				out[i] = res{err: fmt.Errorf("share %d B: %w", size, err)}
				return
			}
			dir := t.TempDir()
			path, err := down.Get(ctx, link, dir)
			out[i] = res{data: data, path: path, id: link.ID, err: err}
		}()
	}
	wg.Wait()
	for i, r := range out {
		if r.err != nil {
			t.Fatalf("size %d: %v", sizes[i], r.err)
		}
		got, err := os.ReadFile(r.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, r.data) {
			t.Fatalf("size %d: fetched bytes differ (%d vs %d)", sizes[i], len(got), len(r.data))
		}
		if filepath.Dir(r.path) == "" {
			t.Fatal("no path")
		}
	}
	if a := tn.Clients[0].AnonymitySet(); a != 8 {
		t.Fatalf("anonymity set %d, want 8", a)
	}
	// Every public file is indexed; the private one (i == 2) is not: its
	// manifests are sealed and the index shows nothing of it (§6.4).
	idx, err := tn.Clients[1].Index(ctx)
	if err != nil || len(idx) < len(sizes)-1 {
		t.Fatalf("index: %d entries, %v", len(idx), err)
	}
	for _, e := range idx {
		if e.FileID == out[2].id {
			t.Fatalf("the private file is in the index: %+v", e)
		}
	}
}
