//go:build riffletest

package node_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
	"github.com/riffle-net/riffle/store"
)

// TestOnionsStoredBeforeSending: a client with a data directory stores each
// signed submission before sending it; after an interruption mid-epoch the
// stored submissions are there, and the next start sends them again and
// forgets them (§5.1 v2, §5.4).
func TestOnionsStoredBeforeSending(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, Params: node.TestParams(256)})
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg := client.ClientConfig{Network: node.VirtualNet(t), Server: tn.Addr(0), DataDir: dir, MinAnonymity: 1, Now: true}
		c, err := client.NewClient(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		marker := filepath.Join(dir, client.PendingFile)
		if err := wait.Until(ctx, time.Minute, func() bool { return c.Stats().Rounds >= 3 }); err != nil {
			t.Fatal("client never took part in rounds")
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(marker)
		if err != nil {
			t.Fatalf("no pending-epoch marker after an interruption: %v", err)
		}
		var id [32]byte
		b, err := hex.DecodeString(strings.Fields(string(raw))[0])
		if err != nil || len(b) != 32 {
			t.Fatalf("marker %q", raw)
		}
		copy(id[:], b)
		db, err := store.OpenClient(filepath.Join(dir, client.ClientDBFile), store.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The onions of the last rounds are stored; those of rounds more than
		// W+2 behind the newest are pruned as the epoch goes (store's
		// PutOnionPruned), so the file holds a few at a time.
		stored := 0
		for r := uint32(0); r < 256; r++ {
			if _, err := db.Onion(id, r); err == nil {
				stored++
			}
		}
		if w := int(node.TestParams(256).W); stored < 1 || stored > w+3 {
			t.Fatalf("%d submissions stored after an interruption, want 1 to W+3 = %d", stored, w+3)
		}
		db.Close()
		c2, err := client.NewClient(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		if err := wait.Until(ctx, time.Minute, func() bool {
			// Gone, or naming the next epoch the new client joined.
			now, err := os.ReadFile(marker)
			return os.IsNotExist(err) || (err == nil && string(now) != string(raw))
		}); err != nil {
			t.Fatal("stored submissions never resent and dropped")
		}
	})
}
