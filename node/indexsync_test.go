//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// indexServer is a real server on 127.0.0.1 with a bbolt store and no
// peers, so it never runs an epoch: it only serves its index.
func indexServer(t *testing.T, page int) *Server {
	t.Helper()
	p := testParams(8)
	p.IndexHours = 1
	s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"},
		NoLAN: true, MinServers: 3, Params: p, Logger: anonLogger(), serverHookCfg: serverHookCfg{indexPage: page}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// indexFiles indexes n public files of 40 chunks of 1 KiB at s (a root and
// two inner manifest nodes each), as publication would, and returns the
// ids of the manifests added.
func indexFiles(t *testing.T, s *Server, n int) [][32]byte {
	t.Helper()
	var ids [][32]byte
	for i := 0; i < n; i++ {
		data := make([]byte, 40<<10)
		rand.Read(data)
		var mans []store.Manifest
		var chunks []store.Chunk
		link, err := chunker.Share(bytes.NewReader(data), fmt.Sprintf("f%d.bin", i), "", MinChunkSize, chunker.ShareOptions{}, func(id chunker.ID, c []byte) error {
			c = append([]byte(nil), c...)
			chunks = append(chunks, store.Chunk{ID: id, Data: c})
			if proto.IsManifest(c) {
				mans = append(mans, store.Manifest{ID: id, Round: uint32(i), Data: c})
				ids = append(ids, id)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.store.PutChunks(chunks); err != nil {
			t.Fatal(err)
		}
		entry := IndexEntry{FileID: link.ID, Name: fmt.Sprintf("f%d.bin", i), Size: uint64(len(data)), Chunks: 40, Round: uint32(i), Time: time.Unix(1700000000+int64(i), 0)}
		if err := s.store.PutManifests(mans, []IndexEntry{entry}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// bareClient is a client of primary s that runs no epoch: only its index
// sync, called by the test. dir is its data directory ("" for none).
func bareClient(t *testing.T, s *Server, dir string) *Client {
	t.Helper()
	h, err := newHost(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.AddAddrs(s.ID(), s.Addrs(), time.Hour)
	c := NewBareClient(h, s.ID(), dir, anonLogger())
	t.Cleanup(func() {
		c.Inspect().CloseDB()
		h.Close()
	})
	return c
}

// serverCopy is what server s indexes: its entries' file ids and its
// manifests, sorted.
func serverCopy(t *testing.T, s *Server) (entries []string, mans []string) {
	t.Helper()
	idx, err := s.store.Index()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range idx {
		entries = append(entries, fmt.Sprintf("%x %s %d", e.FileID, e.Name, e.Size))
	}
	raw, err := s.store.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range raw {
		mans = append(mans, fmt.Sprintf("%x", b))
	}
	sort.Strings(entries)
	sort.Strings(mans)
	return entries, mans
}

// clientCopy is c's synced copy in the same form.
func clientCopy(c *Client) (entries []string, mans []string) {
	for _, e := range c.Inspect().IndexEntries() {
		entries = append(entries, fmt.Sprintf("%x %s %d", e.FileID, e.Name, e.Size))
	}
	for _, b := range c.Inspect().IndexManifests() {
		mans = append(mans, fmt.Sprintf("%x", b))
	}
	sort.Strings(entries)
	sort.Strings(mans)
	return entries, mans
}

func sameCopy(t *testing.T, s *Server, c *Client) {
	t.Helper()
	se, sm := serverCopy(t, s)
	ce, cm := clientCopy(c)
	if fmt.Sprint(se) != fmt.Sprint(ce) || fmt.Sprint(sm) != fmt.Sprint(cm) {
		t.Fatalf("synced copy differs from the server's index: %d/%d entries, %d/%d manifests", len(ce), len(se), len(cm), len(sm))
	}
}

// TestIndexSyncPages (§7 v3): an index larger than one page is synced
// across pages, each within the page budget, and the client's copy equals
// the server's index.
func TestIndexSyncPages(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const page = 2 << 10
		s := indexServer(t, page)
		ids := indexFiles(t, s, 12)
		c := bareClient(t, s, "")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := c.Inspect().SyncIndexFrom(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		// 36 manifests and 12 entries of about 18 KiB in all: at least 8
		// pages of 2 KiB.
		if res.Pages < 8 || res.Mans != len(ids) || res.Entries != 12 {
			t.Fatalf("synced %+v, want ≥ 8 pages, %d manifests, 12 entries", res, len(ids))
		}
		if res.Bytes > res.Pages*(page+wire.MaxManifest) {
			t.Fatalf("%d bytes in %d pages", res.Bytes, res.Pages)
		}
		t.Logf("%d manifests, %d entries in %d pages, %d bytes", res.Mans, res.Entries, res.Pages, res.Bytes)
		sameCopy(t, s, c)
		// Synced again: one page, nothing new.
		res, err = c.Inspect().SyncIndexFrom(ctx, s.ID())
		if err != nil || res.Pages != 1 || res.Mans+res.Entries+res.Removed != 0 {
			t.Fatalf("second sync read %+v (%v)", res, err)
		}
		// A second client, synced before the retention runs out.
		c2 := bareClient(t, s, "")
		_, err = c2.Inspect().SyncIndexFrom(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		// The index retention (1 h here) lets every manifest go at the
		// server, which logs the removals. A client applies a removal only
		// once the retention has about run since it first held the id: at
		// once, it keeps its copy (a server cannot take a manifest out of one
		// client's copy early), and drops it by itself later.
		if _, err := s.store.(interface{ Prune(time.Time) (int, error) }).Prune(time.Now().Add(2 * time.Hour)); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		c.Inspect().SetIndexRetention(1)
		c2.Inspect().SetIndexRetention(1)
		c.Inspect().SetIndexClock(func() time.Time { return now })
		res, err = c.Inspect().SyncIndexFrom(ctx, s.ID())
		if err != nil || res.Removed != 0 || res.Early != len(ids) || len(c.Inspect().IndexManifests()) != len(ids) {
			t.Fatalf("early removals: %+v (%v), %d manifests left", res, err, len(c.Inspect().IndexManifests()))
		}
		c.Inspect().SetIndexClock(func() time.Time { return now.Add(2 * time.Hour) })
		c.Inspect().ExpireIndex()
		sameCopy(t, s, c)
		// The second client syncs once the retention has about run: it
		// applies the removals.
		c2.Inspect().SetIndexClock(func() time.Time { return now.Add(55 * time.Minute) })
		res, err = c2.Inspect().SyncIndexFrom(ctx, s.ID())
		if err != nil || res.Removed != len(ids) || len(c2.Inspect().IndexManifests())+len(c2.Inspect().IndexEntries()) != 0 {
			t.Fatalf("after the index retention: %+v (%v), %d manifests left", res, err, len(c2.Inspect().IndexManifests()))
		}
		sameCopy(t, s, c2)
	})
}

// TestIndexSyncResumes (§7 v3): a client restarted with its database asks
// only for the changes after its stored cursor: the few manifests indexed
// since, not the whole index again.
func TestIndexSyncResumes(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := indexServer(t, 0)
		indexFiles(t, s, 10)
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := bareClient(t, s, dir)
		first, err := c.Inspect().SyncIndexFrom(ctx, s.ID())
		if err != nil || first.Mans != 30 {
			t.Fatalf("first sync: %+v, %v", first, err)
		}
		c.Inspect().CloseDB()
		indexFiles(t, s, 1)
		// A new process: a fresh libp2p identity, the same database.
		again := bareClient(t, s, dir)
		res, err := again.Inspect().SyncIndexFrom(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("first sync: %d pages, %d bytes; after the restart: %d pages, %d bytes", first.Pages, first.Bytes, res.Pages, res.Bytes)
		if res.Mans != 3 || res.Entries != 1 || res.Bytes*5 > first.Bytes {
			t.Fatalf("restarted sync read %+v (first %+v): not only what is new", res, first)
		}
		sameCopy(t, s, again)
	})
}

// TestIndexReqHostile: a page request with a cursor past the log gets an
// empty page that ends at the log's end; one longer than its fixed size
// is refused unread; pages in flight are bounded; a server whose page does
// not move the cursor on ends the client's sync.
func TestIndexReqHostile(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := indexServer(t, 0)
		indexFiles(t, s, 2)
		h, err := newHost(t, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		h.AddAddrs(s.ID(), s.Addrs(), time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rep, err := transport.Call(ctx, h, s.ID(), transport.Request{Proto: ProtoClient, Type: wire.TypeIndexReq, Body: (&wire.IndexReq{Cursor: math.MaxUint64}).Marshal(), Timeout: transport.ShortTimeout})
		if err != nil {
			t.Fatal(err)
		}
		var pg wire.Index
		if err := pg.Unmarshal(rep, wire.MaxIndexPageItems); err != nil {
			t.Fatal(err)
		}
		if pg.More || pg.Next != 8 || len(pg.Entries)+len(pg.Manifests)+len(pg.Removed) != 0 {
			t.Fatalf("page for a cursor past the log: next %d more %v, %d items", pg.Next, pg.More, len(pg.Entries)+len(pg.Manifests))
		}
		for _, body := range [][]byte{make([]byte, wire.IndexReqSize+1), make([]byte, 1<<20), nil} {
			if _, err := transport.Call(ctx, h, s.ID(), transport.Request{Proto: ProtoClient, Type: wire.TypeIndexReq, Body: body, Timeout: transport.ShortTimeout}); err == nil {
				t.Fatalf("index request of %d bytes answered", len(body))
			}
		}
		// The server still answers a well-formed request.
		if _, err := transport.Call(ctx, h, s.ID(), transport.Request{Proto: ProtoClient, Type: wire.TypeIndexReq, Body: (&wire.IndexReq{}).Marshal(), Timeout: transport.ShortTimeout}); err != nil {
			t.Fatal(err)
		}

		// Pages in flight are bounded: peers with no slot here share
		// slots.MaxOutsiderIndex, and a slot comes back when its stream ends (the
		// requests above give theirs back once their streams are done).
		slotsFree := func() bool {
			return s.ix.Slots.All() == 0
		}
		if err := wait.Until(ctx, 10*time.Second, slotsFree); err != nil {
			t.Fatalf("the requests above kept their slots: %v", err)
		}
		var cancels []context.CancelFunc
		for i := range slots.MaxOutsiderIndex + 1 {
			sctx, scancel := context.WithCancel(ctx)
			cancels = append(cancels, scancel)
			err := s.ix.Pages.Enter(sctx, h.ID())
			if (i < slots.MaxOutsiderIndex) != (err == nil) {
				t.Fatalf("outsider page %d: %v", i, err)
			}
		}
		if _, err := transport.Call(ctx, h, s.ID(), transport.Request{Proto: ProtoClient, Type: wire.TypeIndexReq, Body: (&wire.IndexReq{}).Marshal(), Timeout: transport.ShortTimeout}); err == nil {
			t.Fatal("a page beyond the outsiders' slots was served")
		}
		for _, f := range cancels {
			f()
		}
		err = wait.Until(ctx, 10*time.Second, slotsFree)
		if err != nil {
			t.Fatalf("slots not given back: %v", err)
		}

		// A client whose cursor is past the server's log (the server's store
		// was replaced) reads the log again from the start.
		fresh := bareClient(t, s, "")
		fresh.Inspect().SetIndexCursor(s.ID(), 1000)
		res, err := fresh.Inspect().SyncIndexFrom(ctx, s.ID())
		if err != nil || res.Reset != 1 || res.Mans != 6 {
			t.Fatalf("cursor past the log: %+v, %v", res, err)
		}
		sameCopy(t, s, fresh)

		// A hostile server: every page says more follows, at the same cursor.
		bad, err := newHost(t, nil, []string{"/ip4/127.0.0.1/tcp/0"})
		if err != nil {
			t.Fatal(err)
		}
		defer bad.Close()
		var asked int
		transport.Serve(ctx, bad, &transport.Gate{}, anonLogger(), ProtoClient, transport.ShortTimeout, func(peer.ID, wire.Type) int { return 64 }, func(_ context.Context, _ peer.ID, _ wire.Type, body []byte) (wire.Type, []byte, error) {
			asked++
			var req wire.IndexReq
			if err := req.Unmarshal(body); err != nil {
				return 0, nil, err
			}
			return wire.TypeIndex, (&wire.Index{Next: req.Cursor, More: true}).Marshal(), nil
		})
		c := bareClient(t, s, "")
		c.Inspect().Host().AddAddrs(bad.ID(), bad.Addrs(), time.Hour)
		_, err = c.Inspect().SyncIndexFrom(ctx, bad.ID())
		if err == nil || asked != 1 {
			t.Fatalf("a page that does not move the cursor: %v after %d requests", err, asked)
		}
	})
}

// TestIndexGapFilledFromAnotherServer (§6.4, §7 v3): a primary that leaves
// a file's manifests out of one client's copy of the index is caught by
// the signed request lists of the epoch that named them, checked by the
// epoch's checkpoints and once after its last list, and the client
// completes its copy from the chain's other servers, asked at once; the
// user is told of the gap.
func TestIndexGapFilledFromAnotherServer(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		data, manifests, _, _ := manifestFile(t)
		var victimID atomic.Value
		victimID.Store(peer.ID(""))
		tn := startAnonNet(t, 3, 0, 2, manifestParams(), func(i int, c *ServerConfig) {
			if i == 0 {
				c.observe = &testObserver{IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
					if to == victimID.Load().(peer.ID) {
						return nil
					}
					return mans
				}}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var warned lockedBuf
		up, victim := tn.startPair(ctx, t, &warned)
		victimID.Store(victim.Inspect().PeerID())
		if _, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false); err != nil {
			t.Fatal(err)
		}
		if err := wait.Until(ctx, 80*time.Second, func() bool { return victim.Stats().IndexGaps > 0 }); err != nil {
			t.Fatalf("no gap noticed: %+v", victim.Stats())
		}
		if st := victim.Stats(); st.IndexFilled != st.IndexGaps {
			t.Fatalf("%d gaps, %d filled from another server", st.IndexGaps, st.IndexFilled)
		}
		// The gets take the filled copy from the next epoch's start on.
		held := 0
		if err := wait.Until(ctx, 30*time.Second, func() bool {
			held = 0
			for id := range manifests {
				if victim.Inspect().HasManifest(id) {
					held++
				}
			}
			return held == len(manifests)
		}); err != nil {
			t.Fatalf("the victim's copy holds %d of the file's %d manifests", held, len(manifests))
		}
		if !strings.Contains(warned.String(), "lacks") {
			t.Fatalf("the user was not told: %s", warned.String())
		}
	})
}

// TestIndexGapPrimaryStalls (§6.4 v3, issue 26): a primary that stalls
// the sync of one client's copy past the primary's half of the sync time
// whenever a page holds a file's manifests, rather than leave them out,
// is caught as one that leaves them out: the client completes its copy
// from the other servers, counts those manifests as gaps and warns its
// user. Before, the others filled the copy but no gap was counted and the
// user was never told.
func TestIndexGapPrimaryStalls(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		data, manifests, _, _ := manifestFile(t)
		var victimID atomic.Value
		victimID.Store(peer.ID(""))
		tn := startAnonNet(t, 3, 0, 2, manifestParams(), func(i int, c *ServerConfig) {
			if i == 0 {
				c.observe = &testObserver{IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
					if to != victimID.Load().(peer.ID) {
						return mans
					}
					for _, m := range mans {
						if manifests[m.ID] {
							time.Sleep(proto.CheckpointSyncTime)
							return nil
						}
					}
					return mans
				}}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var warned lockedBuf
		up, victim := tn.startPair(ctx, t, &warned)
		victimID.Store(victim.Inspect().PeerID())
		if _, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false); err != nil {
			t.Fatal(err)
		}
		held := 0
		if err := wait.Until(ctx, 80*time.Second, func() bool {
			held = 0
			for id := range manifests {
				if victim.Inspect().HasManifest(id) {
					held++
				}
			}
			return held == len(manifests)
		}); err != nil {
			t.Fatalf("the victim's copy holds %d of the file's %d manifests", held, len(manifests))
		}
		st := victim.Stats()
		if st.IndexGaps == 0 || st.IndexFilled != st.IndexGaps {
			t.Fatalf("the others filled the copy: %d gaps, %d filled", st.IndexGaps, st.IndexFilled)
		}
		if !strings.Contains(warned.String(), "lacks") {
			t.Fatalf("the user was not told: %s", warned.String())
		}
	})
}

// TestMemStoreIndexSince: the in-memory store (tests, the demo) logs and
// pages the index as the bbolt store does.
func TestMemStoreIndexSince(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		st := NewMemStore()
		var want [][32]byte
		for i := range 5 {
			b := make([]byte, 1000)
			rand.Read(b)
			id := chunker.Sum(b)
			if err := st.PutChunks([]store.Chunk{{ID: id, Data: b}}); err != nil {
				t.Fatal(err)
			}
			var idx []IndexEntry
			if i == 0 {
				idx = []IndexEntry{{FileID: id, Name: "root"}}
			}
			if err := st.PutManifests([]store.Manifest{{ID: id, Data: b}}, idx); err != nil {
				t.Fatal(err)
			}
			want = append(want, id)
		}
		var got [][32]byte
		cur, pages, entries := uint64(0), 0, 0
		for {
			ch, err := st.IndexSince(cur, 2100)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, m := range ch.Manifests {
				got = append(got, m.ID)
			}
			entries += len(ch.Entries)
			cur = ch.Next
			if !ch.More {
				break
			}
		}
		// In the order indexed, about two 1000-byte manifests a page.
		if pages != 3 || fmt.Sprint(got) != fmt.Sprint(want) || entries != 1 {
			t.Fatalf("%d pages, %d manifests, %d entries", pages, len(got), entries)
		}
		if ch, _ := st.IndexSince(math.MaxUint64, 2100); ch.Next != cur || ch.More || len(ch.Manifests) != 0 {
			t.Fatalf("cursor past the log: %+v", ch)
		}
	})
}

// TestIndexCheckSameAfterMissedEpoch (§6.4 v3, issue 26): which manifests
// a client checks its copy against follows the epoch it is in, never the
// epochs it attended. Their primary leaves a file's manifests out of
// what it sends clients A and B; A was in the epoch whose lists named
// them, B joins at the next one (it missed that epoch). During B's first
// epoch A asks the chain's other servers for nothing: it checked that
// epoch's lists once after its last one, before the next began. B checks
// that epoch at its start, as every client of the next epoch does, and
// asks the others for what its copy lacks (TestWindowManifestsPrevEpoch).
// Under the rule before (each epoch's start checked the lists of the
// last epoch the client attended), A turned to another server there.
func TestIndexCheckSameAfterMissedEpoch(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		data, manifests, _, _ := manifestFile(t)
		p := manifestParams()
		// The default registration window: the end check (2 s after the
		// last list) is over before the next epoch's descriptor is final.
		p.RegWindowMs = DefaultParams().RegWindowMs
		var (
			mu       sync.Mutex
			victims  = map[peer.ID]bool{}
			counting bool
			served   = map[peer.ID]int{} // pages the other servers served, while counting
		)
		tn := startAnonNet(t, 3, 0, 2, p, func(i int, c *ServerConfig) {
			c.observe = &testObserver{IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
				mu.Lock()
				defer mu.Unlock()
				if i != 0 {
					if counting && victims[to] {
						served[to]++
					}
					return mans
				}
				if !victims[to] {
					return mans
				}
				var out []store.Manifest
				for _, m := range mans {
					if _, ok := manifests[m.ID]; !ok {
						out = append(out, m)
					}
				}
				return out
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		client := func(srv int, o *ClientObserver) *Client {
			c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[srv].Addrs()[0].String(), Logger: anonLogger(),
				ClientHookCfg: ClientHookCfg{Observe: o}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		up := client(1, nil)
		a := client(0, nil)
		mu.Lock()
		victims[a.Inspect().PeerID()] = true
		mu.Unlock()
		if err := wait.Until(ctx, time.Minute, func() bool { return a.Stats().Epochs >= 1 }); err != nil {
			t.Fatal("A took no epoch")
		}
		if _, err := up.Share(ctx, bytes.NewReader(data), "m.bin", false); err != nil {
			t.Fatal(err)
		}
		aEpochs := a.Stats().Epochs
		bJoins := 0
		b := client(0, &ClientObserver{Joined: func([32]byte, uint32, []byte) {
			mu.Lock()
			defer mu.Unlock()
			bJoins++
			counting = bJoins == 1
		}})
		mu.Lock()
		victims[b.Inspect().PeerID()] = true
		mu.Unlock()
		if err := wait.Until(ctx, 2*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return bJoins >= 2
		}); err != nil {
			t.Fatalf("B took %d epochs", bJoins)
		}
		mu.Lock()
		sa, sb := served[a.Inspect().PeerID()], served[b.Inspect().PeerID()]
		mu.Unlock()
		st := a.Stats()
		t.Logf("during B's first epoch the other servers served A %d index pages, B %d; A took %d epochs before and saw %d gaps (%d filled)", sa, sb, aEpochs, st.IndexGaps, st.IndexFilled)
		if st.IndexGaps == 0 || st.IndexFilled != st.IndexGaps {
			t.Fatalf("A saw %d gaps, %d filled: the primary left nothing out", st.IndexGaps, st.IndexFilled)
		}
		if sa != 0 || sb == 0 {
			t.Fatalf("the other servers served A %d index pages and B %d during B's first epoch, want none to A and some to B", sa, sb)
		}
	})
}
