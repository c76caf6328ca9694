package node_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/nodetest"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/store"
)

// TestOnionsStoredBeforeSending: a client with a data directory stores each
// signed submission before sending it; after an interruption mid-epoch the
// stored submissions are there, and the next start sends them again and
// forgets them (§5.1 v2, §5.4).
func TestOnionsStoredBeforeSending(t *testing.T) {
	tn := nodetest.New(t, nodetest.Config{Servers: 3, Clients: 2, Params: node.TestParams(256)})
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := node.ClientConfig{Server: tn.Addr(0), DataDir: dir, MinAnonymity: 1, Now: true}
	c, err := node.NewClient(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, node.PendingFile)
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
	db, err := store.OpenClient(filepath.Join(dir, node.ClientDBFile), store.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Onion(id, 0); err != nil {
		t.Fatalf("round 0's submission not stored: %v", err)
	}
	db.Close()
	c2, err := node.NewClient(ctx, cfg)
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
}
