//go:build riffletest

package node

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/store"
)

// TestWindowManifestsNewcomer (§6.4 v3, issue 26): a client checks its
// copy of the index against the manifest ids that the pools of its decoy
// window name, pinned by closing records every chain server of those
// epochs signed, so a newcomer checks the manifests of epochs it was not
// in as every other client does. Its primary leaves a file's manifests
// out of every page it sends the newcomer, which joins two epochs after
// the one that published the file. The newcomer takes them from the
// chain's other servers at its first epoch's start, counts them as gaps
// and tells its user. Before, nothing named them to it: it never asked
// another server, never held them, and saw no gap.
func TestWindowManifestsNewcomer(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		data, manifests, _, _ := manifestFile(t)
		var (
			mu     sync.Mutex
			victim peer.ID
		)
		tn := startAnonNet(t, 3, 0, 2, manifestParams(), func(i int, c *ServerConfig) {
			if i != 0 {
				return
			}
			c.observe = &testObserver{IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
				mu.Lock()
				defer mu.Unlock()
				if to != victim {
					return mans
				}
				var out []store.Manifest
				for _, m := range mans {
					if !manifests[m.ID] {
						out = append(out, m)
					}
				}
				return out
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		client := func(srv int, progress *lockedBuf) *Client {
			cfg := ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[srv].Addrs()[0].String(), Logger: anonLogger()}
			if progress != nil {
				cfg.Progress = progress
			}
			c, err := NewClient(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		up := client(1, nil)
		client(2, nil) // an epoch runs with two clients
		if _, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false); err != nil {
			t.Fatal(err)
		}
		// The file's epoch is over and has its record: two more epochs.
		if err := wait.Until(ctx, 2*time.Minute, func() bool {
			_, mans := serverCopy(t, tn.servers[2])
			return len(mans) >= len(manifests)
		}); err != nil {
			t.Fatal("the index never took the file's manifests")
		}
		seen := up.Stats().Epochs
		if err := wait.Until(ctx, 2*time.Minute, func() bool { return up.Stats().Epochs >= seen+2 }); err != nil {
			t.Fatal("the uploader took no more epochs")
		}
		var warned lockedBuf
		mu.Lock()
		b := client(0, &warned)
		victim = b.PeerID()
		mu.Unlock()
		held := func() int {
			n := 0
			for id := range manifests {
				if b.HasManifest(id) {
					n++
				}
			}
			return n
		}
		// Its first epoch's start (or, joined at an epoch whose window
		// ends before the file's, the next one's).
		if err := wait.Until(ctx, 80*time.Second, func() bool { return held() == len(manifests) }); err != nil {
			t.Fatalf("the newcomer holds %d of the file's %d manifests after %d epochs: %+v", held(), len(manifests), b.Stats().Epochs, b.Stats())
		}
		st := b.Stats()
		t.Logf("the newcomer held the file's manifests after %d epochs: %d gaps, %d filled", st.Epochs, st.IndexGaps, st.IndexFilled)
		if st.IndexGaps != len(manifests) || st.IndexFilled != st.IndexGaps {
			t.Fatalf("%d gaps, %d filled, want %d and %d", st.IndexGaps, st.IndexFilled, len(manifests), len(manifests))
		}
		if !strings.Contains(warned.String(), "closing records of the decoy window") {
			t.Fatalf("the user was not told: %s", warned.String())
		}
	})
}

// TestWindowManifestsRestart (§6.4 v3, issue 26): a restarted client
// checks what the window names as a newcomer does. Its primary leaves a
// file's manifests out of every page it sends the client; in the file's
// epoch the end check fills them from the other servers, in memory only.
// Restarted on the same data directory, the client's copy lacks them and
// its cursor at the primary is past them, so only the window's check
// brings them back (counted and told again). Before, the restarted client
// never held them again.
func TestWindowManifestsRestart(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		data, manifests, _, _ := manifestFile(t)
		var (
			mu     sync.Mutex
			victim peer.ID
		)
		tn := startAnonNet(t, 3, 0, 2, manifestParams(), func(i int, c *ServerConfig) {
			if i != 0 {
				return
			}
			c.observe = &testObserver{IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
				mu.Lock()
				defer mu.Unlock()
				if to != victim {
					return mans
				}
				var out []store.Manifest
				for _, m := range mans {
					if !manifests[m.ID] {
						out = append(out, m)
					}
				}
				return out
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		dir := t.TempDir()
		start := func(srv int, dir string, progress *lockedBuf) *Client {
			cfg := ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[srv].Addrs()[0].String(), Logger: anonLogger(), DataDir: dir}
			if progress != nil {
				cfg.Progress = progress
			}
			c, err := NewClient(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		holds := func(c *Client) int {
			n := 0
			for id := range manifests {
				if c.HasManifest(id) {
					n++
				}
			}
			return n
		}
		up := start(1, "", nil)
		mu.Lock()
		a := start(0, dir, nil)
		victim = a.PeerID()
		mu.Unlock()
		if err := wait.Until(ctx, time.Minute, func() bool { return a.Stats().Epochs >= 1 }); err != nil {
			t.Fatal("the client took no epoch")
		}
		if _, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false); err != nil {
			t.Fatal(err)
		}
		if err := wait.Until(ctx, 80*time.Second, func() bool { return holds(a) == len(manifests) }); err != nil {
			t.Fatalf("before the restart the client holds %d of the file's %d manifests: %+v", holds(a), len(manifests), a.Stats())
		}
		if st := a.Stats(); st.IndexGaps != len(manifests) {
			t.Fatalf("before the restart: %d gaps, want %d", st.IndexGaps, len(manifests))
		}
		a.Close()
		var warned lockedBuf
		mu.Lock()
		b := start(0, dir, &warned)
		victim = b.PeerID()
		mu.Unlock()
		if err := wait.Until(ctx, 80*time.Second, func() bool { return holds(b) == len(manifests) }); err != nil {
			t.Fatalf("restarted, the client holds %d of the file's %d manifests after %d epochs: %+v", holds(b), len(manifests), b.Stats().Epochs, b.Stats())
		}
		st := b.Stats()
		t.Logf("restarted, the client held the file's manifests after %d epochs: %d gaps, %d filled", st.Epochs, st.IndexGaps, st.IndexFilled)
		if st.IndexGaps != len(manifests) || st.IndexFilled != st.IndexGaps {
			t.Fatalf("%d gaps, %d filled, want %d and %d", st.IndexGaps, st.IndexFilled, len(manifests), len(manifests))
		}
		if !strings.Contains(warned.String(), "closing records of the decoy window") {
			t.Fatalf("the user was not told: %s", warned.String())
		}
	})
}
