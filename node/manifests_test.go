//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// manifestFile is a file whose manifest spans a root and two inner nodes at
// the smallest chunk size: 40 data chunks of 1 KiB.
func manifestFile(t *testing.T) (data []byte, manifests, chunks map[[32]byte]bool, order [][32]byte) {
	t.Helper()
	data = make([]byte, 40<<10)
	rand.Read(data)
	manifests, chunks = map[[32]byte]bool{}, map[[32]byte]bool{}
	_, err := chunker.Share(bytes.NewReader(data), "m.bin", "", MinChunkSize, chunker.ShareOptions{}, func(id chunker.ID, c []byte) error {
		if proto.IsManifest(c) {
			manifests[id] = true
		} else if !chunks[id] {
			chunks[id] = true
			order = append(order, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) != 3 {
		t.Fatalf("%d manifest chunks, want a root and two nodes", len(manifests))
	}
	return data, manifests, chunks, order
}

// requestLog records what clients' jobs request, per client and epoch.
type requestLog struct {
	mu  sync.Mutex
	ids map[string]map[[32]byte][][32]byte
}

func (l *requestLog) observer(name string) *ClientObserver {
	return &ClientObserver{Requested: func(epoch [32]byte, _ uint32, ids [][32]byte) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.ids == nil {
			l.ids = map[string]map[[32]byte][][32]byte{}
		}
		if l.ids[name] == nil {
			l.ids[name] = map[[32]byte][][32]byte{}
		}
		l.ids[name][epoch] = append(l.ids[name][epoch], ids...)
	}}
}

func (l *requestLog) get(name string, epoch [32]byte) [][32]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][32]byte(nil), l.ids[name][epoch]...)
}

func manifestParams() Params {
	p := testParams(24)
	p.ChunkSize = MinChunkSize
	return p
}

// TestGetTakesManifestsFromIndex (§6.4 v3): a get of a file whose manifest
// spans a root and inner nodes takes every manifest chunk from the index it
// synced: no output position ever requests a manifest id, and the file
// arrives whole.
func TestGetTakesManifestsFromIndex(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		data, manifests, chunks, _ := manifestFile(t)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		up, down, asked := requestNet(t, ctx)
		link, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		path, err := down.Get(ctx, link, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched file differs (%v)", err)
		}
		for id := range manifests {
			if n := asked(id); n != 0 {
				t.Errorf("manifest %x requested %d times by PIR", id[:6], n)
			}
		}
		n := 0
		for id := range chunks {
			if asked(id) > 0 {
				n++
			}
		}
		if n != len(chunks) {
			t.Fatalf("%d of %d data chunks requested", n, len(chunks))
		}
	})
}

// requestNet starts three servers and two cover clients, server 0 counting
// the ids requested of it, with an uploader whose primary is server 1 and a
// downloader whose primary is server 0; asked reads the counts.
func requestNet(t *testing.T, ctx context.Context) (up, down *Client, asked func([32]byte) int) {
	t.Helper()
	var mu sync.Mutex
	counts := map[[32]byte]int{}
	tn := startAnonNet(t, 3, 0, 2, manifestParams(), func(i int, c *ServerConfig) {
		if i == 0 {
			c.observe = &testObserver{Requests: func(_ [32]byte, _ uint32, _ int, ids [][32]byte) {
				mu.Lock()
				defer mu.Unlock()
				for _, id := range ids {
					counts[id]++
				}
			}}
		}
	})
	up, down = tn.startPair(ctx, t, nil)
	return up, down, func(id [32]byte) int {
		mu.Lock()
		defer mu.Unlock()
		return counts[id]
	}
}

// TestCorruptedAnswersChangeNoRequest (§6.4 v3): a primary that corrupts
// every answer to one client learns nothing from what that client requests
// next: in the epoch its get starts, the client requests the same ids, in
// the same order, as a client of an honest primary getting the same file
// (what it needs comes from the link and the synced index, never from an
// answer).
func TestCorruptedAnswersChangeNoRequest(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		data, _, chunks, _ := manifestFile(t)
		tn := startAnonNet(t, 3, 0, 2, manifestParams(), func(i int, c *ServerConfig) {
			if i == 0 {
				c.observe = &testObserver{Corrupt: func([32]byte, uint32, uint32, int) bool { return true }}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var log requestLog
		client := func(server int, name string) *Client {
			c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[server].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: log.observer(name)}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		up, victim, honest := client(1, "up"), client(0, "victim"), client(2, "honest")
		link, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		go victim.Get(ctx, link, t.TempDir())
		if _, err := honest.Get(ctx, link, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		// The first epoch in which the honest client's get requested chunks.
		log.mu.Lock()
		var epoch [32]byte
		for ep, ids := range log.ids["honest"] {
			if len(ids) > 0 && (epoch == [32]byte{} || len(ids) > len(log.ids["honest"][epoch])) {
				epoch = ep
			}
		}
		log.mu.Unlock()
		h, v := log.get("honest", epoch), log.get("victim", epoch)
		if len(v) < 10 {
			t.Fatalf("the victim requested %d ids in the epoch, the honest client %d: its requests followed the corrupted answers", len(v), len(h))
		}
		short, long := v, h
		if len(short) > len(long) {
			short, long = long, short
		}
		for i := range short {
			if short[i] != long[i] {
				t.Fatalf("request %d differs: victim %x, honest %x", i, v[i][:6], h[i][:6])
			}
			if !chunks[short[i]] {
				t.Fatalf("request %d (%x) is not a data chunk of the file", i, short[i][:6])
			}
		}
		if st := victim.Stats(); st.BadAnswers == 0 {
			t.Fatalf("no answer corrupted: %+v", st)
		}
	})
}

// TestIndexCarriesManifests: a server's index holds the bytes of every
// manifest chunk indexed, and a client keeps those that parse, by id.
func TestIndexCarriesManifests(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var kept [][]byte
		_, err := chunker.Share(bytes.NewReader(make([]byte, 40<<10)), "z", "", MinChunkSize, chunker.ShareOptions{}, func(id chunker.ID, c []byte) error {
			if proto.IsManifest(c) {
				kept = append(kept, append([]byte(nil), c...))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		st := NewMemStore()
		var mans []store.Manifest
		for _, b := range kept {
			id := chunker.Sum(b)
			if err := st.PutChunks([]store.Chunk{{ID: id, Data: b}}); err != nil {
				t.Fatal(err)
			}
			mans = append(mans, store.Manifest{ID: id, Data: b})
		}
		if err := st.PutManifests(mans, nil); err != nil {
			t.Fatal(err)
		}
		raw, err := st.Manifests()
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, []byte("not a manifest, dropped by the client"))
		got := proto.SyncedManifests(raw)
		if len(got) != len(kept) {
			t.Fatalf("client kept %d manifests of %d", len(got), len(kept))
		}
		for _, b := range kept {
			if !bytes.Equal(got[chunker.Sum(b)], b) {
				t.Fatal("manifest bytes differ")
			}
		}
	})
}

// TestIndexGapDetected (§6.4 v3): the request list that every server signs
// names the manifests indexed in its round, so a client whose primary
// leaves manifests out of its copy of the index notices at its next sync
// and warns its user; a client of an honest primary sees no gap.
func TestIndexGapDetected(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		data, _, _, _ := manifestFile(t)
		tn := startAnonNet(t, 3, 0, 2, manifestParams(), func(i int, c *ServerConfig) {
			if i == 0 {
				c.observe = &testObserver{IndexReply: func(peer.ID, []store.Manifest) []store.Manifest { return nil }}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var warned lockedBuf
		up, victim := tn.startPair(ctx, t, &warned)
		if _, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false); err != nil {
			t.Fatal(err)
		}
		if err := wait.UntilEvery(ctx, 90*time.Second, 50*time.Millisecond, func() bool { return victim.Stats().IndexGaps != 0 }); err != nil {
			t.Fatalf("no gap noticed: %+v", victim.Stats())
		}
		if !strings.Contains(warned.String(), "lacks") {
			t.Fatalf("the user was not told: %s", warned.String())
		}
		// The honest primary's client has synced since, and its copy holds
		// every manifest the lists named.
		n := up.Stats().Epochs
		if err := wait.UntilEvery(ctx, 90*time.Second, 50*time.Millisecond, func() bool { return up.Stats().Epochs >= n+2 }); err != nil {
			t.Fatal("no more epochs")
		}
		if st := up.Stats(); st.IndexGaps != 0 {
			t.Fatalf("the client of an honest primary saw %d gaps", st.IndexGaps)
		}
	})
}

// TestIndexCapsPerPseudonym (§6.4 v3): of five files shared by one client
// in one epoch, its sharing cap switched off, the index takes the manifests
// of four; the fifth, left out of the signed list, is sent again and taken
// in a later epoch.
func TestIndexCapsPerPseudonym(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(48)
		p.ChunkSize = MinChunkSize
		tn := startAnonNet(t, 3, 0, 2, p, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		up, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger(),
			ClientHookCfg: ClientHookCfg{Observe: &ClientObserver{NoManifestCap: true}}})
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close()
		other, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[0].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		// Start at an epoch's beginning: the ten uploads fit in its rounds.
		n := up.Stats().Epochs
		if err := wait.UntilEvery(ctx, 90*time.Second, 10*time.Millisecond, func() bool { return up.Stats().Epochs > n }); err != nil {
			t.Fatal("no epoch")
		}
		var hs []*ShareHandle
		for i := 0; i < 5; i++ {
			h, err := up.StartShare(ctx, bytes.NewReader([]byte{byte(i), 1, 2, 3}), "f"+string(rune('a'+i)), false)
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		for _, h := range hs {
			select {
			case <-h.Done():
			case <-ctx.Done():
				t.Fatalf("share not done: %d left", h.Left())
			}
		}
		// Every server's index holds the five, at most four from one epoch.
		for _, s := range tn.servers {
			var idx []IndexEntry
			_ = wait.Until(ctx, 90*time.Second, func() bool { // the checks below say what is missing
				if idx, err = s.store.Index(); err != nil {
					t.Fatal(err)
				}
				return len(idx) >= 5
			})
			byEpoch := map[[32]byte]int{}
			found := 0
			for _, e := range idx {
				for _, h := range hs {
					if e.FileID == [32]byte(h.Link.ID) {
						found++
						byEpoch[e.Epoch]++
					}
				}
			}
			if found != 5 || len(byEpoch) < 2 {
				t.Fatalf("%d files indexed, in %d epochs", found, len(byEpoch))
			}
			for _, n := range byEpoch {
				if n > proto.ManifestsPerPseudonym {
					t.Fatalf("%d manifests of one pseudonym indexed in one epoch", n)
				}
			}
		}
	})
}
