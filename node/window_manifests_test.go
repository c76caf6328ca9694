//go:build riffletest

package node

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
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
		victim = b.Inspect().PeerID()
		mu.Unlock()
		held := func() int {
			n := 0
			for id := range manifests {
				if b.Inspect().HasManifest(id) {
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
				if c.Inspect().HasManifest(id) {
					n++
				}
			}
			return n
		}
		up := start(1, "", nil)
		mu.Lock()
		a := start(0, dir, nil)
		victim = a.Inspect().PeerID()
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
		victim = b.Inspect().PeerID()
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

// TestWindowManifestsPrevEpoch (§6.4 v3, issue 26): at an epoch's start
// every client checks the manifests of the epoch before as well as the
// window's, so a newcomer checks the same epochs as a client that was
// there. The primary leaves a file's manifests out of every page it
// sends two clients: one in the file's epoch X (its end check fills
// them) and a newcomer that joins X + 1. At X + 1's start both check the
// same epochs, X among them, and the newcomer holds the file's manifests
// from its first epoch on (counted and told). Before, X was in no check
// of X + 1 (not yet in the window): the newcomer held them only at
// X + 2's start, an epoch after the old client.
func TestWindowManifestsPrevEpoch(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		data, manifests, _, _ := manifestFile(t)
		var (
			mu      sync.Mutex
			victims = map[peer.ID]bool{}
			checked = map[string]map[uint64][]uint64{}
			joined  = map[string][]uint64{}
		)
		// Each server leaves the epoch before's record out of its first
		// window reply to the newcomer, which asks for it again at its
		// epoch's start (fetchPrev).
		var (
			newcomer peer.ID
			stripped = map[int]int{}
		)
		tn := startAnonNet(t, 3, 0, 2, manifestParams(), func(i int, c *ServerConfig) {
			o := &testObserver{WindowReply: func(to peer.ID, w *wire.Window) {
				mu.Lock()
				defer mu.Unlock()
				if to != newcomer || stripped[i] > 0 || len(w.Items) == 0 {
					return
				}
				stripped[i]++
				w.Items[0].Closing, w.Items[0].Pool = nil, nil
			}}
			if i == 0 {
				o.IndexReply = func(to peer.ID, mans []store.Manifest) []store.Manifest {
					mu.Lock()
					defer mu.Unlock()
					if !victims[to] {
						return mans
					}
					var out []store.Manifest
					for _, m := range mans {
						if !manifests[m.ID] {
							out = append(out, m)
						}
					}
					return out
				}
			}
			c.observe = o
		})
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		client := func(name string, srv int, progress *lockedBuf) *Client {
			o := &ClientObserver{
				StartCheck: func(n uint64, eps []uint64) {
					mu.Lock()
					defer mu.Unlock()
					if checked[name] == nil {
						checked[name] = map[uint64][]uint64{}
					}
					checked[name][n] = slices.Sorted(slices.Values(eps))
				},
				WindowAt: func(n uint64, _ []uint64) {
					mu.Lock()
					defer mu.Unlock()
					joined[name] = append(joined[name], n)
				},
			}
			cfg := ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[srv].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o}}
			if progress != nil {
				cfg.Progress = progress
			}
			mu.Lock()
			defer mu.Unlock()
			c, err := NewClient(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if srv == 0 {
				victims[c.Inspect().PeerID()] = true
			}
			if name == "new" {
				newcomer = c.Inspect().PeerID()
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		up := client("up", 1, nil)
		old := client("old", 0, nil)
		if err := wait.Until(ctx, time.Minute, func() bool { return old.Stats().Epochs >= 1 }); err != nil {
			t.Fatal("the old client took no epoch")
		}
		if _, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false); err != nil {
			t.Fatal(err)
		}
		if err := wait.Until(ctx, 2*time.Minute, func() bool {
			_, mans := serverCopy(t, tn.servers[2])
			return len(mans) >= len(manifests)
		}); err != nil {
			t.Fatal("the index never took the file's manifests")
		}
		mu.Lock()
		x := joined["up"][len(joined["up"])-1]
		mu.Unlock()
		var warned lockedBuf
		b := client("new", 0, &warned)
		held := func(c *Client) int {
			n := 0
			for id := range manifests {
				if c.Inspect().HasManifest(id) {
					n++
				}
			}
			return n
		}
		if err := wait.Until(ctx, 80*time.Second, func() bool { return held(b) == len(manifests) }); err != nil {
			t.Fatalf("the newcomer holds %d of the file's %d manifests after %d epochs", held(b), len(manifests), b.Stats().Epochs)
		}
		st := b.Stats()
		mu.Lock()
		first := joined["new"][0]
		nb, no := checked["new"][first], checked["old"][first]
		mu.Unlock()
		mu.Lock()
		asked := len(stripped)
		mu.Unlock()
		if asked == 0 {
			t.Fatal("no window reply to the newcomer was stripped")
		}
		t.Logf("file's epoch %d; the newcomer's first %d; checked at its start: newcomer %v, old client %v; held after %d epochs: %d gaps, %d filled", x, first, nb, no, st.Epochs, st.IndexGaps, st.IndexFilled)
		if first != x+1 {
			t.Fatalf("the newcomer's first epoch is %d, not the one after the file's (%d): the test shows nothing", first, x)
		}
		if st.Epochs != 1 {
			t.Fatalf("the newcomer held the file's manifests after %d epochs, want from its first", st.Epochs)
		}
		if !slices.Equal(nb, no) || !slices.Contains(nb, x) {
			t.Fatalf("at %d's start the newcomer checked epochs %v, the old client %v; want the same, with %d", first, nb, no, x)
		}
		if st.IndexGaps != len(manifests) || st.IndexFilled != st.IndexGaps {
			t.Fatalf("%d gaps, %d filled, want %d and %d", st.IndexGaps, st.IndexFilled, len(manifests), len(manifests))
		}
		if !strings.Contains(warned.String(), "closing records of the decoy window") {
			t.Fatalf("the user was not told: %s", warned.String())
		}
	})
}
