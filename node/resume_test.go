package node_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestResumableGet interrupts a download and starts it again into the same
// directory: the second run fetches only what the partial file lacks.
func TestResumableGet(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 4, Params: node.TestParams(64)})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const chunks = 12
		data := nodetest.RandBytes(t, chunks*(16<<10))
		link, err := tn.Clients[0].Share(ctx, bytes.NewReader(data), "resume.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		fresh := tn.Clients[2]
		f0 := fresh.Stats().Fetched
		if _, err := fresh.Get(ctx, link, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		t.Logf("a fresh get fetched %d chunks", fresh.Stats().Fetched-f0)
		dl := tn.Clients[1]
		dir := t.TempDir()
		gctx, gcancel := context.WithCancel(ctx)
		// Polled every millisecond: in virtual time, with a millisecond
		// each way, a round takes a few milliseconds.
		go func() {
			_ = wait.UntilEvery(gctx, 2*time.Minute, time.Millisecond, func() bool { return dl.Stats().Fetched >= 5 })
			gcancel()
		}()
		if _, err := dl.Get(gctx, link, dir); err == nil {
			t.Fatal("first get finished before it was interrupted")
		}
		before := dl.Stats().Fetched
		var partBytes int64
		if fi, err := os.Stat(filepath.Join(dir, "resume.bin.riffle-part")); err == nil {
			partBytes = fi.Size()
		}
		path, err := dl.Get(ctx, link, dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("resumed download differs: %v", err)
		}
		// Requests sealed into onions before the interruption are still
		// answered afterwards, so the fetch count is not a measure of what was
		// kept; the partial file is: the chunker verifies and keeps every chunk
		// in it (its own tests check that only the missing ones are needed).
		t.Logf("interrupted after %d fetches with %d bytes on disk, resumed with %d fetches", before, partBytes, dl.Stats().Fetched-before)
		if partBytes < 16<<10 {
			t.Fatalf("the interrupted download left %d bytes, not one whole chunk", partBytes)
		}
	})
}
