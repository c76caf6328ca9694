package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/catchup"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
	"github.com/riffle-net/riffle/store"
)

// TestCatchupAfterPartition (§7 v3): a server partitioned from the group
// while a file is shared is out of those epochs' chains and misses the
// file; once the partition heals it catches up from the others: it holds
// the file's root and every chunk and indexes the file, and a client
// whose primary it is fetches the file byte-exact.
func TestCatchupAfterPartition(t *testing.T) {
	long(t) // whole networks over many epochs: the full pass runs it, the race pass would take half a minute
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		net := memnet.New(memnet.Link{Latency: time.Millisecond}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const m, n = 4, 5
		p := testParams(8)
		var peers []string
		var servers []*Server
		for i := range m {
			s, err := NewServer(ctx, ServerConfig{DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: append([]string(nil), peers...),
				Nick: fmt.Sprintf("s%d", i), MinServers: 3, MinClients: 2, NoLAN: true, Params: p, Logger: anonLogger(), Network: net})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			servers = append(servers, s)
			peers = append(peers, s.Addrs()[0].String())
		}
		var clients []*Client
		for i := range n {
			c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: peers[i%m], Logger: anonLogger(), Network: net})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clients = append(clients, c)
		}
		out := servers[m-1]
		if err := wait.Until(ctx, 2*time.Minute, func() bool { return len(out.Chain()) == m && clients[0].Stats().Epochs > 0 }); err != nil {
			t.Fatal("the group did not form")
		}
		var others []peer.ID
		for _, id := range net.Hosts() {
			if id != out.ID() {
				others = append(others, id)
			}
		}
		net.Partition([]peer.ID{out.ID()}, others)
		// The epoch the partition broke ends; the others go on without it.
		e0 := clients[0].Stats().Epochs
		if err := wait.Until(ctx, 2*time.Minute, func() bool { return clients[0].Stats().Epochs > e0+1 }); err != nil {
			t.Fatal("no epoch without the partitioned server")
		}
		data := make([]byte, 2*int(p.ChunkSize)+100)
		for i := range data {
			data[i] = byte(i*7 + i/251)
		}
		sctx, scancel := context.WithTimeout(ctx, 3*time.Minute)
		link, err := clients[0].Share(sctx, bytes.NewReader(data), "missed.bin", false)
		scancel()
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := out.store.HasChunk(link.ID); ok {
			t.Fatal("the partitioned server holds the file before the partition heals")
		}
		net.Heal()
		indexed := func() bool {
			_, ok, _ := indexEntryOf(out, link.ID)
			return ok
		}
		if err := wait.Until(ctx, 3*time.Minute, indexed); err != nil {
			t.Fatal("the server did not catch up: the file is not indexed there")
		}
		fctx, fcancel := context.WithTimeout(ctx, 3*time.Minute)
		defer fcancel()
		path, err := clients[m-1].Get(fctx, link, t.TempDir())
		if err != nil {
			t.Fatalf("a client of the server that caught up: %v", err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched %d bytes (%v), not the %d shared", len(got), err, len(data))
		}
	})
}

// indexEntryOf returns s's index entry of a file.
func indexEntryOf(s *Server, id [32]byte) (IndexEntry, bool, error) {
	idx, err := s.store.Index()
	for _, e := range idx {
		if e.FileID == id {
			return e, true, err
		}
	}
	return IndexEntry{}, false, err
}

// TestCatchupRefusesForgeries (§7 v3): a peer that serves a server's
// catch-up a closing record not signed by every chain server of its
// certified epoch, a list that is not the one the record signed, or chunk
// bodies that do not hash to their ids, gets nothing stored (no chunk,
// manifest, index entry or closing record) and is left alone; index
// entries and manifests of its pages are never taken. An honest peer
// serving the same epoch gets it all taken.
func TestCatchupRefusesForgeries(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := NewServer(ctx, ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Nick: "victim",
			MinServers: 3, MinClients: 2, NoLAN: true, Params: testParams(8), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()

		// A file, published in round 0 of an epoch of a two-server chain
		// whose keys the test holds.
		var chunks []store.Chunk
		link, err := chunker.Share(bytes.NewReader(bytes.Repeat([]byte("catch up "), 3000)), "f.bin", "", MinChunkSize, chunker.ShareOptions{},
			func(id chunker.ID, c []byte) error {
				chunks = append(chunks, store.Chunk{ID: id, Data: append([]byte(nil), c...)})
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		rl := wire.RoundList{Epoch: [32]byte{0xe1}, Round: 0}
		for _, c := range chunks {
			rl.Published = append(rl.Published, c.ID)
			if proto.IsManifest(c.Data) {
				rl.Manifests = append(rl.Manifests, c.ID)
			}
		}
		var keys []crypto.PrivKey
		var chain [][]byte
		for range 2 {
			k, _, _ := crypto.GenerateEd25519Key(nil)
			id, _ := peer.IDFromPrivateKey(k)
			keys = append(keys, k)
			chain = append(chain, []byte(id))
		}
		if bytes.Compare(chain[0], chain[1]) > 0 { // a certificate's chain is sorted
			keys[0], keys[1], chain[0], chain[1] = keys[1], keys[0], chain[1], chain[0]
		}
		closing := wire.Closing{Epoch: rl.Epoch, Rounds: []wire.ClosingRound{{State: wire.ClosedPublished, List: proto.ListDigest(&rl)}, {}}}
		for _, k := range keys {
			sg, err := proto.Sign(k, proto.ClosingDigest(&closing))
			if err != nil {
				t.Fatal(err)
			}
			closing.Sigs = append(closing.Sigs, sg)
		}
		s.cert.Put(5, (&wire.Cert{Kind: wire.CertFinal, Number: 5, Epoch: rl.Epoch, Chain: chain, Abort: []byte{}}).Marshal(), 5+catchup.Recent)

		// A fake file in the pages, named by no list.
		fake := bytes.Repeat([]byte{0x42}, 64)
		fakeID := chunker.Sum(fake)
		serveAs := func(mode string) peer.ID {
			h, err := newHost(t, nil, []string{"/ip4/127.0.0.1/tcp/0"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			rec := closing
			if mode == "closing" {
				rec.Sigs = [][64]byte{closing.Sigs[0], closing.Sigs[0]}
			}
			page := wire.Index{Next: 3, Entries: []wire.IndexEntry{{FileID: fakeID, Name: []byte("fake"), Size: 64, Chunks: 1}},
				Manifests: [][]byte{fake}, Closings: [][]byte{rec.Marshal()}}
			var g transport.Gate
			caps := func(peer.ID, wire.Type) int { return 64 << 10 }
			transport.Serve(ctx, h, &g, quietLogger(), ProtoClient, transport.ShortTimeout, caps, func(_ context.Context, _ peer.ID, t wire.Type, _ []byte) (wire.Type, []byte, error) {
				return wire.TypeIndex, page.Marshal(), nil
			})
			transport.Serve(ctx, h, &g, quietLogger(), ProtoRound, transport.ShortTimeout, caps, func(_ context.Context, _ peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
				switch t {
				case wire.TypeListReq:
					l := rl
					if mode == "list" {
						l.Manifests = append([][32]byte{fakeID}, l.Manifests...)
					}
					return wire.TypeRoundList, l.Marshal(), nil
				case wire.TypeGetChunk:
					var c wire.Chunk
					if err := c.Unmarshal(body, 0); err != nil {
						return 0, nil, err
					}
					for _, ch := range chunks {
						if ch.ID == c.ID {
							data := ch.Data
							if mode == "chunk" {
								data = append([]byte{1}, data[1:]...)
							}
							return wire.TypeChunk, (&wire.Chunk{ID: c.ID, Data: data}).Marshal(), nil
						}
					}
					return 0, nil, errors.New("no such chunk")
				}
				return 0, nil, errors.New("not served")
			})
			s.h.AddAddrs(h.ID(), h.Addrs(), time.Hour)
			return h.ID()
		}
		stored := func() string {
			var held []string
			for _, c := range chunks {
				if ok, _ := s.store.HasChunk(c.ID); ok {
					held = append(held, fmt.Sprintf("chunk %x", c.ID[:4]))
				}
			}
			if ok, _ := s.store.HasChunk(fakeID); ok {
				held = append(held, "the fake chunk")
			}
			if idx, _ := s.store.Index(); len(idx) > 0 {
				held = append(held, fmt.Sprintf("%d index entries", len(idx)))
			}
			if mans, _ := s.store.Manifests(); len(mans) > 0 {
				held = append(held, fmt.Sprintf("%d manifests", len(mans)))
			}
			if _, err := s.store.Closing(rl.Epoch); err == nil {
				held = append(held, "the closing record")
			}
			return strings.Join(held, ", ")
		}
		for _, mode := range []string{"closing", "list", "chunk"} {
			p := serveAs(mode)
			want, _ := s.ix.Catch.Lacking()
			if len(want) != 1 {
				t.Fatalf("%s: %d epochs lacking, want 1", mode, len(want))
			}
			s.ix.Catch.From(ctx, p, want)
			if got := stored(); got != "" {
				t.Fatalf("a peer forging the %s got stored: %s", mode, got)
			}
			if !s.ix.Catch.Shunned(p) {
				t.Fatalf("a peer forging the %s is not left alone", mode)
			}
		}
		p := serveAs("honest")
		want, _ := s.ix.Catch.Lacking()
		s.ix.Catch.From(ctx, p, want)
		if len(want) != 0 || s.ix.Catch.Shunned(p) {
			t.Fatalf("an honest peer: %d epochs left, shunned %v", len(want), s.ix.Catch.Shunned(p))
		}
		e, ok, _ := indexEntryOf(s, link.ID)
		if !ok || e.Name != "f.bin" {
			t.Fatalf("the file is not indexed from the honest peer: %+v", e)
		}
		if got := stored(); strings.Contains(got, "fake") || !strings.Contains(got, "closing") {
			t.Fatalf("from the honest peer: %s", got)
		}
		if idx, _ := s.store.Index(); len(idx) != 1 {
			t.Fatalf("%d index entries, want the file's alone", len(idx))
		}
		if n, _ := s.store.CatchupCursor([]byte(p)); n != 3 {
			t.Fatalf("cursor %d after the honest page, want 3", n)
		}
	})
}

// fakeEpoch is an epoch of a two-server chain whose keys a test holds:
// a file published in its round 0, its list and closing record.
type fakeEpoch struct {
	link    chunker.Link
	chunks  []store.Chunk
	list    wire.RoundList
	closing wire.Closing
	chain   [][]byte
	keys    []crypto.PrivKey // the chain servers', in chain order
}

func newFakeEpoch(t *testing.T, id byte, text string) *fakeEpoch {
	t.Helper()
	f := &fakeEpoch{}
	var err error
	f.link, err = chunker.Share(bytes.NewReader(bytes.Repeat([]byte(text), 3000)), text+".bin", "", MinChunkSize, chunker.ShareOptions{},
		func(id chunker.ID, c []byte) error {
			f.chunks = append(f.chunks, store.Chunk{ID: id, Data: append([]byte(nil), c...)})
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	f.list = wire.RoundList{Epoch: [32]byte{id}, Round: 0}
	for _, c := range f.chunks {
		f.list.Published = append(f.list.Published, c.ID)
		if proto.IsManifest(c.Data) {
			f.list.Manifests = append(f.list.Manifests, c.ID)
		}
	}
	var keys []crypto.PrivKey
	for range 2 {
		k, _, _ := crypto.GenerateEd25519Key(nil)
		pid, _ := peer.IDFromPrivateKey(k)
		keys = append(keys, k)
		f.chain = append(f.chain, []byte(pid))
	}
	if bytes.Compare(f.chain[0], f.chain[1]) > 0 {
		keys[0], keys[1], f.chain[0], f.chain[1] = keys[1], keys[0], f.chain[1], f.chain[0]
	}
	f.keys = keys
	f.closing = wire.Closing{Epoch: f.list.Epoch, Rounds: []wire.ClosingRound{{State: wire.ClosedPublished, List: proto.ListDigest(&f.list)}, {}}}
	for _, k := range keys {
		sg, err := proto.Sign(k, proto.ClosingDigest(&f.closing))
		if err != nil {
			t.Fatal(err)
		}
		f.closing.Sigs = append(f.closing.Sigs, sg)
	}
	return f
}

func (f *fakeEpoch) cert(n uint64) []byte {
	return (&wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: f.list.Epoch, Chain: f.chain, Abort: []byte{}}).Marshal()
}

// TestCatchupKeepsUnknownRecords (the swarm's seed 3): a peer's index
// page holds the closing records of two epochs the server lacks, one
// whose certificate it holds and one whose certificate it has not yet
// taken, and the peer gives it no certificate (a server just restarted is
// not yet in its peers' rosters). The server takes the first and keeps its
// cursor before the page; once the second's certificate comes (the
// certificate sync, even after the read's list of epochs lacking was
// made), the next read takes the second too. The cursor moved
// past the page at once, so that the second epoch was never read again
// from that peer: a server restarted after 36 s down gave up every epoch
// it had missed.
func TestCatchupKeepsUnknownRecords(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := NewServer(ctx, ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Nick: "late",
			MinServers: 3, MinClients: 2, NoLAN: true, Params: testParams(8), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		a, b := newFakeEpoch(t, 0xa, "known "), newFakeEpoch(t, 0xb, "unknown ")
		s.cert.Put(5, a.cert(5), 5+catchup.Recent)

		h, err := newHost(t, nil, []string{"/ip4/127.0.0.1/tcp/0"})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		page := wire.Index{Next: 3, Closings: [][]byte{a.closing.Marshal(), b.closing.Marshal()}}
		var g transport.Gate
		caps := func(peer.ID, wire.Type) int { return 64 << 10 }
		transport.Serve(ctx, h, &g, quietLogger(), ProtoClient, transport.ShortTimeout, caps, func(context.Context, peer.ID, wire.Type, []byte) (wire.Type, []byte, error) {
			return wire.TypeIndex, page.Marshal(), nil
		})
		transport.Serve(ctx, h, &g, quietLogger(), ProtoEpoch, transport.ShortTimeout, caps, func(context.Context, peer.ID, wire.Type, []byte) (wire.Type, []byte, error) {
			return 0, nil, errors.New("node: certificates only for roster servers")
		})
		transport.Serve(ctx, h, &g, quietLogger(), ProtoRound, transport.ShortTimeout, caps, func(_ context.Context, _ peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
			switch t {
			case wire.TypeListReq:
				var ref wire.EpochRef
				if err := ref.Unmarshal(body); err != nil {
					return 0, nil, err
				}
				for _, f := range []*fakeEpoch{a, b} {
					if f.list.Epoch == ref.Epoch {
						return wire.TypeRoundList, f.list.Marshal(), nil
					}
				}
			case wire.TypeGetChunk:
				var c wire.Chunk
				if err := c.Unmarshal(body, 0); err != nil {
					return 0, nil, err
				}
				for _, f := range []*fakeEpoch{a, b} {
					for _, ch := range f.chunks {
						if ch.ID == c.ID {
							return wire.TypeChunk, (&wire.Chunk{ID: c.ID, Data: ch.Data}).Marshal(), nil
						}
					}
				}
			}
			return 0, nil, errors.New("not served")
		})
		s.h.AddAddrs(h.ID(), h.Addrs(), time.Hour)
		p := h.ID()

		want, _ := s.ix.Catch.Lacking()
		s.ix.Catch.From(ctx, p, want)
		if _, ok, _ := indexEntryOf(s, a.link.ID); !ok {
			t.Fatal("the epoch whose certificate the server holds is not taken")
		}
		if n, _ := s.store.CatchupCursor([]byte(p)); n != 0 {
			t.Fatalf("cursor %d past a page with a record the server could not place, want 0", n)
		}
		// The certificate sync brings the second epoch's certificate,
		// after the pass made its list of epochs lacking.
		want, _ = s.ix.Catch.Lacking()
		if len(want) != 0 {
			t.Fatalf("%d epochs lacking, want none before the certificate", len(want))
		}
		s.cert.Put(6, b.cert(6), 0)
		s.ix.Catch.From(ctx, p, want)
		if _, ok, _ := indexEntryOf(s, b.link.ID); !ok || len(want) != 0 {
			t.Fatalf("the second epoch not taken once certified (indexed %v, %d lacking)", ok, len(want))
		}
		if n, _ := s.store.CatchupCursor([]byte(p)); n != 3 {
			t.Fatalf("cursor %d after the page, want 3", n)
		}
	})
}

// TestCatchupWithoutClosing (§7 v3; the swarm's seed 14): an epoch whose
// closing record never formed (a chain server killed at its end) is taken
// from its rounds' final lists, each only with the signature of every
// chain server: a chain server serving a list short of one signature gets
// nothing stored and is left alone; an honest one gets the file held and
// indexed, and no closing record is made up. Before, the server took an
// epoch only through its record, and a file the chain had published and
// its client had seen published never reached the servers out of the
// chain. The rounds asked are those of the epoch's descriptor (R = 16,
// the file in round 12), which the chain servers give with the window:
// before, the server asked its own setting's (R = 8) and missed the file.
func TestCatchupWithoutClosing(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := NewServer(ctx, ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Nick: "out",
			MinServers: 3, MinClients: 2, NoLAN: true, Params: testParams(8), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		f := newFakeEpoch(t, 0xc, "unclosed ")
		desc := wire.Descriptor{Number: 5, Params: testParams(16).Wire()}
		for _, p := range f.chain {
			desc.Group = append(desc.Group, wire.GroupEntry{PeerID: p})
		}
		f.list.Epoch, f.list.Round = proto.EpochID(&desc), 12
		for _, k := range f.keys {
			sg, err := proto.Sign(k, proto.ListDigest(&f.list))
			if err != nil {
				t.Fatal(err)
			}
			f.list.Sigs = append(f.list.Sigs, sg)
		}
		s.cert.Put(5, f.cert(5), 5+catchup.Recent)

		// serveAs runs chain server i: the epoch's descriptor in the
		// window, no closing record in its index log, round 12's list
		// (forged: short of a signature) and the chunks.
		serveAs := func(i int, forged bool) peer.ID {
			h, err := newHost(t, f.keys[i], []string{"/ip4/127.0.0.1/tcp/0"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			var g transport.Gate
			caps := func(peer.ID, wire.Type) int { return 64 << 10 }
			transport.Serve(ctx, h, &g, quietLogger(), ProtoClient, transport.ShortTimeout, caps, func(context.Context, peer.ID, wire.Type, []byte) (wire.Type, []byte, error) {
				return wire.TypeIndex, (&wire.Index{}).Marshal(), nil
			})
			transport.Serve(ctx, h, &g, quietLogger(), ProtoEpoch, transport.ShortTimeout, caps, func(context.Context, peer.ID, wire.Type, []byte) (wire.Type, []byte, error) {
				it := wire.WindowItem{Number: 5, Epoch: f.list.Epoch, Group: window.GroupBytes(&desc)}
				return wire.TypeWindow, (&wire.Window{Items: []wire.WindowItem{it}}).Marshal(), nil
			})
			transport.Serve(ctx, h, &g, quietLogger(), ProtoRound, transport.ShortTimeout, caps, func(_ context.Context, _ peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
				switch t {
				case wire.TypeListReq:
					var ref wire.EpochRef
					if err := ref.Unmarshal(body); err != nil || ref.Epoch != f.list.Epoch || ref.Round != f.list.Round {
						return 0, nil, errors.New("no such list")
					}
					l := f.list
					if forged {
						l.Sigs = [][64]byte{f.list.Sigs[0], f.list.Sigs[0]}
					}
					return wire.TypeRoundList, l.Marshal(), nil
				case wire.TypeGetChunk:
					var c wire.Chunk
					if err := c.Unmarshal(body, 0); err != nil {
						return 0, nil, err
					}
					for _, ch := range f.chunks {
						if ch.ID == c.ID {
							return wire.TypeChunk, (&wire.Chunk{ID: c.ID, Data: ch.Data}).Marshal(), nil
						}
					}
				}
				return 0, nil, errors.New("not served")
			})
			s.h.AddAddrs(h.ID(), h.Addrs(), time.Hour)
			s.roster.saw(h.ID(), fmt.Sprintf("s%d", i), h.Addrs())
			return h.ID()
		}
		held := func() int {
			n := 0
			for _, c := range f.chunks {
				if ok, _ := s.store.HasChunk(c.ID); ok {
					n++
				}
			}
			return n
		}
		forger := serveAs(0, true)
		for range 2 {
			s.ix.Catch.Pass(ctx)
		}
		if n := held(); n > 0 || !s.ix.Catch.Shunned(forger) {
			t.Fatalf("a list short of a signature: %d chunks stored, its server left alone %v", n, s.ix.Catch.Shunned(forger))
		}
		if idx, _ := s.store.Index(); len(idx) > 0 {
			t.Fatalf("a list short of a signature: %d index entries", len(idx))
		}
		honest := serveAs(1, false)
		s.ix.Catch.Pass(ctx)
		if n := held(); n != len(f.chunks) || s.ix.Catch.Shunned(honest) {
			t.Fatalf("an honest chain server: %d of %d chunks held, left alone %v", n, len(f.chunks), s.ix.Catch.Shunned(honest))
		}
		if e, ok, _ := indexEntryOf(s, f.link.ID); !ok || e.Name != "unclosed .bin" {
			t.Fatalf("the file is not indexed: %+v", e)
		}
		if _, err := s.store.Closing(f.list.Epoch); err == nil {
			t.Fatal("a closing record was kept that no chain signed")
		}
	})
}
