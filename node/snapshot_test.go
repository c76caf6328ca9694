package node_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestSnapshots follows a share started with StartShare and a get with
// GetProgress, and checks what the client and server snapshots say of a
// running network (the web UI's view).
func TestSnapshots(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, Params: node.TestParams(16)})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		up, down := tn.Clients[0], tn.Clients[1]
		data := make([]byte, 40<<10) // 3 data chunks of 16 KiB and a manifest
		rand.Read(data)
		h, err := up.StartShare(ctx, bytes.NewReader(data), "snap.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		if h.Total != 4 || len(h.IDs) != 4 || h.IDs[len(h.IDs)-1] != h.Link.ID {
			t.Fatalf("share handle: total %d, %d ids, root last %v", h.Total, len(h.IDs), h.IDs[len(h.IDs)-1] == h.Link.ID)
		}
		if h.Left() == 0 {
			t.Fatal("nothing left before any round")
		}
		select {
		case <-h.Done():
		case <-ctx.Done():
			t.Fatal("share never finished")
		}
		if h.Left() != 0 {
			t.Fatalf("%d chunks left after Done", h.Left())
		}
		ids := make([][32]byte, len(h.IDs))
		for i, id := range h.IDs {
			ids[i] = id
		}
		for i, held := range up.Holds(ids) {
			if !held {
				t.Errorf("the sharer does not hold chunk %d", i)
			}
		}
		if held := down.Holds(ids); held[0] {
			t.Errorf("the other client holds a chunk it never fetched")
		}

		if _, ok := down.GetProgress(h.Link.ID); ok {
			t.Fatal("progress of a get that does not run")
		}
		done := make(chan error, 1)
		var path string
		go func() {
			var err error
			path, err = down.Get(ctx, h.Link, t.TempDir())
			done <- err
		}()
		if err := wait.Until(ctx, time.Minute, func() bool { _, ok := down.GetProgress(h.Link.ID); return ok }); err != nil {
			t.Fatal("the running get has no progress")
		}
		var maxHeld, total int
		var name string
		var chunks []chunker.ID
		for running := true; running; {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				running = false
			case <-time.After(20 * time.Millisecond):
				if st, ok := down.GetProgress(h.Link.ID); ok && st.Total > 0 {
					maxHeld, total, name, chunks = max(maxHeld, st.Held), st.Total, st.Name, st.Chunks
				}
			}
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Fatal("fetched bytes differ")
		}
		if total != 3 || name != "snap.bin" || maxHeld > total || len(chunks) != 3 || chunks[0] != h.IDs[0] {
			t.Errorf("get progress: total %d, name %q, held up to %d, chunks %v (shared %v)", total, name, maxHeld, chunks, h.IDs)
		}
		if _, ok := down.GetProgress(h.Link.ID); ok {
			t.Error("progress of a finished get")
		}
		if held := down.Holds([][32]byte{h.IDs[0]}); !held[0] {
			t.Error("the fetching client does not hold what it fetched")
		}

		cs := down.Snapshot()
		if cs.Epoch == "" || cs.Number == 0 || cs.AnonymitySet != 2 || len(cs.Chain) != 3 || cs.ChunkSize != 16<<10 || cs.Rounds != 16 || cs.K != 2 || cs.Stats.Fetched == 0 {
			t.Errorf("client snapshot %+v", cs)
		}
		if cs.Primary != tn.Servers[1].ID().String() || cs.Queued != 0 || cs.Wanted != 0 || len(cs.Pins) != 0 {
			t.Errorf("client snapshot: primary %s, queued %d, wanted %d, pins %v", cs.Primary, cs.Queued, cs.Wanted, cs.Pins)
		}
		for _, m := range cs.Chain {
			if m.Nick == "" {
				t.Errorf("chain member %s without nick", m.ID)
			}
		}

		// A client that pins server 2 sees the pin held once it is in an
		// epoch (server 2 is in every chain of this network).
		pinned, err := tn.NewClient(ctx, 0, client.ClientConfig{Require: []peer.ID{tn.Servers[2].ID()}})
		if err != nil {
			t.Fatal(err)
		}
		defer pinned.Close()
		if ps := pinned.Snapshot(); len(ps.Pins) != 1 || ps.Pins[0].PeerID != tn.Servers[2].ID().String() {
			t.Fatalf("pins %+v", ps.Pins)
		}
		if err := wait.Until(ctx, time.Minute, func() bool { return pinned.Snapshot().Epoch != "" }); err != nil {
			t.Fatal("the pinning client never joined an epoch")
		}
		if ps := pinned.Snapshot(); !ps.Pins[0].InChain {
			t.Errorf("pin not in the chain: %+v", ps)
		}

		ss := tn.Servers[0].Snapshot()
		if ss.PeerID != tn.Servers[0].ID().String() || ss.Nick != "s0" || len(ss.Chain) != 3 || len(ss.Roster) != 2 || len(ss.Epochs) == 0 {
			t.Fatalf("server snapshot %+v", ss)
		}
		if ss.StoreBytes < int64(len(data)) || ss.Timing.Rounds == 0 {
			t.Errorf("store %d bytes, %d rounds timed", ss.StoreBytes, ss.Timing.Rounds)
		}
		e := ss.Epochs[0]
		if e.Clients < 2 || e.Rounds != 16 || len(e.Chain) != 3 {
			t.Errorf("newest epoch %+v", e)
		}
		listed := 0
		for _, e := range ss.Epochs {
			listed = max(listed, e.Listed)
		}
		if listed == 0 {
			t.Errorf("no epoch has a listed round: %+v", ss.Epochs)
		}
		for i := 1; i < len(ss.Epochs); i++ {
			if ss.Epochs[i].Number >= ss.Epochs[i-1].Number {
				t.Errorf("epochs not newest first")
			}
		}
	})
}
