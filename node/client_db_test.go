//go:build riffletest

package node_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
	"github.com/riffle-net/riffle/node/transport/memnet"
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

// TestResumeAfterLostOnion: a share whose client stops between storing a
// round's onion, its chunk marked sent, and sending it (a kill at exactly
// that moment, here the Silent hook and then Close), run again once that
// epoch is over. The chunk never reached a server and the resumed share
// does not send it again (docs/anonymity.md, "Which chunks an interrupted
// share queues"): its last line and a warning say plainly that the link
// may not fetch the whole file, and how many chunks are in doubt. This is
// cmd/riffle's TestShareResumesAfterKill when the kill lands in that gap.
func TestResumeAfterLostOnion(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, Params: node.TestParams(32)})
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		mn := node.VirtualNet(t).(*memnet.Net)
		before := mn.Hosts()
		cfg := client.ClientConfig{Network: mn, Server: tn.Addr(0), DataDir: dir, MinAnonymity: 1, Now: true}
		c, err := client.NewClient(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var self peer.ID
		for _, p := range mn.Hosts() {
			if !slices.Contains(before, p) {
				self = p
			}
		}
		b := int(node.TestParams(32).ChunkSize)
		data := nodetest.RandBytes(t, 10*b+100)
		h, err := c.StartShare(ctx, bytes.NewReader(data), "lost.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		_, total, _, _ := h.Result()
		if err := wait.Until(ctx, 10*time.Minute, func() bool { return h.Left() < total }); err != nil {
			t.Fatal("no chunk of the share published")
		}
		// The next onion is stored, its chunk marked sent, and the client
		// is killed before it sends it: its host drops off the network at
		// once, so neither the send nor Close's hand-over reaches anyone.
		var once sync.Once
		lostIn := make(chan [32]byte, 1)
		c.Hooks.Store(&client.ClientHooks{Silent: func(epoch [32]byte, r, slot uint32) bool {
			once.Do(func() {
				mn.Crash(self)
				lostIn <- epoch
			})
			return true
		}})
		var epoch [32]byte
		select {
		case epoch = <-lostIn:
		case <-ctx.Done():
			t.Fatal("no onion stored after the first chunk published")
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		// Run again only once that epoch is over everywhere: the stored
		// onions, sent again at start, are refused.
		if err := wait.Until(ctx, 10*time.Minute, func() bool {
			for _, s := range tn.Servers {
				for _, es := range s.Snapshot().Epochs {
					if es.ID == epoch && !es.Ended {
						return false
					}
				}
			}
			return true
		}); err != nil {
			t.Fatal("the epoch of the lost onion never ended")
		}
		c2, err := client.NewClient(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		var mu sync.Mutex
		var events []client.JobEvent
		pctx := client.WithProgress(ctx, func(e client.JobEvent) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		})
		if _, err := c2.Share(pctx, bytes.NewReader(data), "lost.bin", false); err != nil {
			t.Fatal(err)
		}
		// The report is true: a chunk of the file is on no server, so its
		// link cannot fetch it whole (what the cmd test asserted before,
		// and failed on when its kill landed here).
		missing := 0
		for _, id := range h.IDs {
			held := false
			for _, s := range tn.Servers {
				held = held || s.HoldsChunk(id)
			}
			if !held {
				missing++
			}
		}
		if missing == 0 {
			t.Fatal("every chunk of the file is held: none was lost")
		}
		mu.Lock()
		defer mu.Unlock()
		var resumed, shared *client.JobEvent
		warned := false
		for i, e := range events {
			switch e.Phase {
			case client.PhaseResuming:
				resumed = &events[i]
			case client.PhaseShared:
				shared = &events[i]
			case client.PhaseWarning:
				warned = warned || strings.Contains(e.Note, "went out just before the earlier run stopped")
			}
		}
		if resumed == nil || shared == nil {
			t.Fatalf("events %+v: want a resume and the share's end", events)
		}
		// At least one chunk published, at least one lost.
		if resumed.Done < 2 || resumed.Done >= resumed.Total {
			t.Fatalf("resumed with %d of %d gone out", resumed.Done, resumed.Total)
		}
		if shared.Unconfirmed < 1 || !warned || !strings.Contains(shared.Line(), "may not fetch the whole file") {
			t.Fatalf("the resumed share's end %q (%d unconfirmed), warned %v: want the chunks in doubt said plainly", shared.Line(), shared.Unconfirmed, warned)
		}
		t.Logf("resumed: %d of %d gone out, %d on no server; %q", resumed.Done, resumed.Total, missing, shared.Line())
	})
}
