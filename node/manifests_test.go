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
	"github.com/riffle-net/riffle/internal/wire"
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
		if isManifest(c) {
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

func (l *requestLog) observer(name string) *testClientObserver {
	return &testClientObserver{Requested: func(epoch [32]byte, _ uint32, ids [][32]byte) {
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
			c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: tn.servers[server].Addrs()[0].String(), Logger: anonLogger(), clientHookCfg: clientHookCfg{observe: log.observer(name)}})
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

// TestManifestCaps (§6.4 v3): the index takes at most 4 manifest chunks of
// one pseudonym and 64 of an epoch, in (round, output position) order,
// whatever order the rounds are published in.
func TestManifestCaps(t *testing.T) {
	virtual(t, func(t *testing.T) {
		cand := func(pos int, tag byte) manifestCand {
			return manifestCand{pos: pos, id: [32]byte{tag, byte(pos)}}
		}
		var mc manifestCaps
		// Round 1 is published before round 0: it waits.
		if got := mc.add(1, []manifestCand{cand(7, 1), cand(3, 1)}); len(got) != 0 {
			t.Fatalf("round 1 taken before round 0: %v", got)
		}
		// Round 0, then round 1 that waited for it. A pseudonym publishes one
		// chunk a round: position 3's fifth manifest comes in round 4.
		got := mc.add(0, []manifestCand{cand(3, 0)})
		if len(got) != 2 || got[0].round != 0 || got[1].round != 1 || len(got[1].cands) != 2 || got[1].cands[0].pos != 3 {
			t.Fatalf("rounds 0 and 1: %+v", got)
		}
		for r := uint32(2); r <= 4; r++ {
			got = mc.add(r, []manifestCand{cand(3, byte(r))})
			if len(got) != 1 || len(got[0].cands) != map[bool]int{true: 1, false: 0}[r < 4] {
				t.Fatalf("round %d: position 3 has %d taken: %+v", r, mc.perPos[3], got)
			}
		}
		// 64 an epoch: 5 taken so far, so 59 of the next 70 go in, the
		// lowest positions first.
		var many []manifestCand
		for pos := 79; pos >= 10; pos-- {
			many = append(many, cand(pos, 9))
		}
		got = mc.add(5, many)
		if n := len(got[0].cands); n != 59 || mc.total != manifestsPerEpoch || got[0].cands[58].pos != 68 {
			t.Fatalf("%d taken in round 5, %d in all", n, mc.total)
		}
		// A round after a gap waits until the epoch ends.
		if got := mc.add(9, []manifestCand{cand(99, 1)}); len(got) != 0 {
			t.Fatal("round after a gap taken")
		}
		if got := mc.flush(); len(got) != 1 || got[0].round != 9 || len(got[0].cands) != 0 {
			t.Fatalf("flush %+v", got)
		}
	})
}

// TestIndexCarriesManifests: a server's index holds the bytes of every
// manifest chunk indexed, and a client keeps those that parse, by id.
func TestIndexCarriesManifests(t *testing.T) {
	virtual(t, func(t *testing.T) {
		var kept [][]byte
		_, err := chunker.Share(bytes.NewReader(make([]byte, 40<<10)), "z", "", MinChunkSize, chunker.ShareOptions{}, func(id chunker.ID, c []byte) error {
			if isManifest(c) {
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
		got := syncedManifests(raw)
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
		for victim.Stats().IndexGaps == 0 {
			if ctx.Err() != nil {
				t.Fatalf("no gap noticed: %+v", victim.Stats())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(warned.String(), "lacks") {
			t.Fatalf("the user was not told: %s", warned.String())
		}
		// The honest primary's client has synced since, and its copy holds
		// every manifest the lists named.
		for n := up.Stats().Epochs; up.Stats().Epochs < n+2; {
			if ctx.Err() != nil {
				t.Fatal("no more epochs")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if st := up.Stats(); st.IndexGaps != 0 {
			t.Fatalf("the client of an honest primary saw %d gaps", st.IndexGaps)
		}
	})
}

// TestSharerKeepsManifestsForLaterEpochs (§6.4 v3): a sharer sends at most
// 4 manifest chunks in an epoch, the index would take no more of its
// pseudonym, and its data chunks go on meanwhile; a manifest published but
// left out of the index (the epoch's 64 were full) goes back to the queue,
// and no further manifest goes out in that epoch.
func TestSharerKeepsManifestsForLaterEpochs(t *testing.T) {
	virtual(t, func(t *testing.T) {
		job := &shareJob{left: map[[32]byte]bool{}, done: make(chan struct{})}
		c := &Client{}
		for i := 0; i < 6; i++ {
			c.upQ = append(c.upQ, upItem{c: store.Chunk{ID: [32]byte{byte(i)}}, job: job, manifest: true})
		}
		c.upQ = append(c.upQ, upItem{c: store.Chunk{ID: [32]byte{0xd}}, job: job})
		for _, u := range c.upQ {
			job.left[u.c.ID] = true
		}
		e := &cepoch{ups: map[uint32]*upItem{}}
		var sent [][32]byte
		for r := 0; r < 5; r++ {
			i := c.nextUpload(e, 0)
			if i < 0 {
				break
			}
			u := c.upQ[i]
			c.upQ = append(c.upQ[:i:i], c.upQ[i+1:]...)
			if u.manifest {
				e.manifestsSent++
			}
			sent = append(sent, u.c.ID)
		}
		if len(sent) != 5 || sent[4] != ([32]byte{0xd}) || c.nextUpload(e, 0) != -1 {
			t.Fatalf("sent %v; %d left", sent, len(c.upQ))
		}
		// A new epoch: its manifests go out again.
		e2 := &cepoch{ups: map[uint32]*upItem{}}
		if i := c.nextUpload(e2, 0); i != 0 || !c.upQ[0].manifest {
			t.Fatalf("next epoch starts with %d", i)
		}
		// Published in round 3 of e2, not taken by the index.
		u := c.upQ[0]
		c.upQ = c.upQ[1:]
		e2.ups[3] = &u
		c.confirm(e2, 3, &wire.RoundList{Published: [][32]byte{u.c.ID}})
		if len(c.upQ) != 2 || c.upQ[0].c.ID != u.c.ID || !job.left[u.c.ID] || c.nextUpload(e2, 0) != -1 {
			t.Fatalf("a manifest left out of the index: queue %d, left %v", len(c.upQ), job.left[u.c.ID])
		}
		// Taken: done with.
		u = c.upQ[0]
		c.upQ = c.upQ[1:]
		e3 := &cepoch{ups: map[uint32]*upItem{3: &u}}
		c.held = map[[32]byte]bool{}
		c.changed = make(chan struct{})
		c.confirm(e3, 3, &wire.RoundList{Published: [][32]byte{u.c.ID}, Manifests: [][32]byte{u.c.ID}})
		if job.left[u.c.ID] {
			t.Fatal("a manifest the index took is still left")
		}
	})
}

// TestIndexCapsPerPseudonym (§6.4 v3): of five files shared by one client
// in one epoch, its sharing cap switched off, the index takes the manifests
// of four; the fifth, left out of the signed list, is sent again and taken
// in a later epoch.
func TestIndexCapsPerPseudonym(t *testing.T) {
	virtual(t, func(t *testing.T) {
		p := testParams(48)
		p.ChunkSize = MinChunkSize
		tn := startAnonNet(t, 3, 0, 2, p, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		up, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger(),
			clientHookCfg: clientHookCfg{observe: &testClientObserver{NoManifestCap: true}}})
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close()
		other, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: tn.servers[0].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		// Start at an epoch's beginning: the ten uploads fit in its rounds.
		for n := up.Stats().Epochs; up.Stats().Epochs <= n; {
			if ctx.Err() != nil {
				t.Fatal("no epoch")
			}
			time.Sleep(10 * time.Millisecond)
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
			for {
				idx, err = s.store.Index()
				if err != nil {
					t.Fatal(err)
				}
				if len(idx) >= 5 || ctx.Err() != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
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
				if n > manifestsPerPseudonym {
					t.Fatalf("%d manifests of one pseudonym indexed in one epoch", n)
				}
			}
		}
	})
}
