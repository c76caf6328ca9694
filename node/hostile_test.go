package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Hostile input straight to the peer-facing handlers: for each, bodies that
// are truncated, oversized, for an unknown epoch, from the wrong sender, for
// a round outside the window, signed by the wrong key, or repeated. Every
// one gets an error (a repeat of what was accepted gets the same answer as
// the first) and leaves the server's state as it was.

// peerKey is a libp2p identity of a peer the test plays.
type peerKey struct {
	id   peer.ID
	priv crypto.PrivKey
}

func newPeerKey(t *testing.T) peerKey {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return peerKey{id, priv}
}

// hostileFixture is a real server (a libp2p host on 127.0.0.1, no peers,
// so it never runs an epoch itself) holding three synthetic epochs of the
// chain (this server and the peers a, b):
//   - led: final, this server leads it (position 0), chain [s, a, b];
//   - mid: final, this server is S_1, chain [a, s, b];
//   - open: open for registration, this server is S_1, chain [a, s, b].
//
// Client slot i has primary i in each epoch.
type hostileFixture struct {
	s              *Server
	a, b, stranger peerKey
	led, mid, open *sepoch
	clients        []ed25519.PrivateKey
	p              Params
}

func newHostileFixture(t *testing.T) *hostileFixture { return newHostileFixtureLog(t, nil) }

// newHostileFixtureLog is newHostileFixture with the server's log (nil:
// none): set before the server starts, since its loops read it.
func newHostileFixtureLog(t *testing.T, log *slog.Logger) *hostileFixture {
	t.Helper()
	p := testParams(8)
	s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"},
		NoLAN: true, Store: NewMemStore(), MinServers: 3, Params: p, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &hostileFixture{s: s, a: newPeerKey(t), b: newPeerKey(t), stranger: newPeerKey(t), p: p}
	var entries []wire.ClientEntry
	for i := 0; i < 3; i++ {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		f.clients = append(f.clients, priv)
		var ce wire.ClientEntry
		copy(ce.RegKey[:], pub)
		ce.Primary = uint16(i)
		ce.XKey[0] = byte(i + 1)
		entries = append(entries, ce)
	}
	mk := func(tag byte, pos int, chain []peer.ID, final bool) *sepoch {
		desc := &wire.Descriptor{Number: uint64(tag), Params: p.Wire(), Clients: entries}
		v := &proto.View{ID: [32]byte{tag}, Desc: desc, Chain: chain}
		e := &sepoch{v: v, pos: pos}
		e.stepMsgs, e.rounds = map[int]*wire.Step{}, map[uint32]*sround{}
		if final {
			e.final = v
			e.reg.SetPhase(true, false, true)
		}
		return e
	}
	f.led = mk(0xA0, 0, []peer.ID{s.ID(), f.a.id, f.b.id}, true)
	f.mid = mk(0xB0, 1, []peer.ID{f.a.id, s.ID(), f.b.id}, true)
	f.open = mk(0xC0, 1, []peer.ID{f.a.id, s.ID(), f.b.id}, false)
	f.open.reg.Opened([]byte("open descriptor"), nil, 0, time.Time{}) // no deadline
	s.mu.Lock()
	for _, e := range []*sepoch{f.led, f.mid, f.open} {
		s.epochs[e.v.ID] = e
	}
	s.open = f.open
	s.number = 0xC0
	s.mu.Unlock()
	return f
}

// state is a summary of everything a handler could change: the server's
// epochs, their registration and setup state, every round's state, and the
// request lists in the store.
func (f *hostileFixture) state() string {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "number %d prep %d open %v epochs %d roster %d banned %d\n", s.number, len(s.prep), s.open != nil, len(s.epochs),
		len(s.roster.live()), len(s.strikes.Banned))
	var ids [][32]byte
	for id := range s.epochs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	for _, id := range ids {
		e := s.epochs[id]
		fmt.Fprintf(&b, "epoch %x ended %v %q final %v %s steps %d stepMsgs %d roots %d evidence %d listHigh %d pruned %d\n",
			id[:1], e.ended, e.reason, e.final != nil, e.reg.Summary(),
			len(e.steps), len(e.stepMsgs), len(e.roots), len(e.evidence), e.listHigh, e.pruned)
		var rs []uint32
		for r := range e.rounds {
			rs = append(rs, r)
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
		for _, r := range rs {
			x := e.rounds[r]
			queries, pads, padFrom, answers := e.pir.Sizes(r)
			fmt.Fprintf(&b, "  round %d subs %d digests %d bodies %d fwd %v mixed %v pub %d/%v list %v queries %d pads %d padFrom %d answers %d pruned %v\n",
				r, len(x.subs), len(x.digests), len(x.bodies), x.forwarded, x.mixed, len(x.pub.IDs), x.pubDone, x.list != nil,
				queries, pads, padFrom, answers, x.pruned)
		}
	}
	lists, held, index := s.store.(*chunks.MemStore).Sizes()
	fmt.Fprintf(&b, "store lists %d chunks %d index %d\n", lists, held, index)
	return b.String()
}

// hostileCase is one hostile input: run feeds it to its handler.
type hostileCase struct {
	name string
	run  func() error
	// setup, if set, runs first and may change state (the original of a
	// repeat); the state after it is the one the repeat must keep.
	setup func() error
	// repeat marks a resend of what setup delivered: it is acknowledged
	// like the first (a lost acknowledgement makes honest peers resend),
	// and changes nothing.
	repeat bool
}

func runHostile(t *testing.T, f *hostileFixture, cases []hostileCase) {
	t.Helper()
	// No subtests: the cases run inside a synctest bubble, which allows
	// none; each failure names its case.
	for _, c := range cases {
		if c.setup != nil {
			if err := c.setup(); err != nil {
				t.Fatalf("%s: setup: %v", c.name, err)
			}
		}
		before := f.state()
		err := c.run()
		if c.repeat && err != nil {
			t.Fatalf("%s: a repeat refused: %v", c.name, err)
		}
		if !c.repeat && err == nil {
			t.Fatalf("%s: accepted", c.name)
		}
		if after := f.state(); after != before {
			t.Fatalf("%s: error %q, but the state changed:\nbefore %s\nafter  %s", c.name, err, before, after)
		}
	}
}

// handlerErr keeps only the error of a handler's result.
func handlerErr(_ wire.Type, _ []byte, err error) error { return err }

func truncated(b []byte) []byte { return b[:len(b)/2] }

func oversized(b []byte) []byte { return append(append([]byte(nil), b...), 0, 0, 0, 0) }

func mustSign(t *testing.T, k crypto.PrivKey, d [32]byte) [64]byte {
	t.Helper()
	sig, err := proto.Sign(k, d)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// batch is a round-r batch for position S of e's chain, signed by k.
func (f *hostileFixture) batch(t *testing.T, e *sepoch, r uint32, S uint16, k crypto.PrivKey) []byte {
	b := wire.Batch{Epoch: e.v.ID, Round: r, S: S, Entries: [][]byte{{1}, {2}, {3}}}
	b.Root = proto.MerkleRoot(b.Entries)
	b.Sig = mustSign(t, k, batchDigest(&b))
	return bytes.Join(b.Segments(), nil)
}

func TestHostileRoundHandlers(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		f := newHostileFixture(t)
		mid, R := f.mid, f.p.Rounds
		good := f.batch(t, mid, 0, 1, f.a.priv)
		unknown := sepoch{v: &proto.View{ID: [32]byte{0xEE}}}
		root := func(r uint32, S uint16, k crypto.PrivKey) []byte {
			b := wire.Batch{Epoch: mid.v.ID, Round: r, S: S, Root: [32]byte{9}}
			return (&wire.Root{Epoch: mid.v.ID, Round: r, S: S, Root: b.Root, Sig: mustSign(t, k, batchDigest(&b))}).Marshal()
		}
		list := func(e *sepoch, r uint32, entries int, sigs int) []byte {
			rl := wire.RoundList{Epoch: e.v.ID, Round: r, Entries: make([]wire.ListEntry, entries), Sigs: make([][64]byte, sigs)}
			for i := range rl.Entries {
				rl.Entries[i].ID[0], rl.Entries[i].Len = byte(i), 1
			}
			return rl.Marshal()
		}
		lsig := func(e *sepoch, r uint32, i uint16, k crypto.PrivKey) []byte {
			ls := wire.ListSig{Epoch: e.v.ID, Round: r, Digest: [32]byte{7}, Index: i}
			ls.Sig = mustSign(t, k, ls.Digest)
			return ls.Marshal()
		}
		pads := func(e *sepoch, r uint32, slots []uint32) []byte {
			rows := wire.Rows{Epoch: e.v.ID, Round: r, Slots: slots}
			for range slots {
				for t := 0; t < int(f.p.K); t++ {
					rows.Rows = append(rows.Rows, make([]byte, f.p.ChunkSize))
				}
			}
			return rows.Marshal()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		runHostile(t, f, []hostileCase{
			{name: "batch/truncated", run: func() error { return handlerErr(f.s.onBatch(f.a.id, truncated(good))) }},
			{name: "batch/oversized", run: func() error { return handlerErr(f.s.onBatch(f.a.id, oversized(good))) }},
			{name: "batch/unknown epoch", run: func() error { return handlerErr(f.s.onBatch(f.a.id, f.batch(t, &unknown, 0, 1, f.a.priv))) }},
			{name: "batch/unknown sender", run: func() error { return handlerErr(f.s.onBatch(f.stranger.id, f.batch(t, mid, 0, 1, f.stranger.priv))) }},
			{name: "batch/wrong position", run: func() error { return handlerErr(f.s.onBatch(f.b.id, f.batch(t, mid, 0, 3-1, f.b.priv))) }},
			{name: "batch/position 0", run: func() error { return handlerErr(f.s.onBatch(f.a.id, f.batch(t, mid, 0, 0, f.a.priv))) }},
			{name: "batch/position beyond chain", run: func() error { return handlerErr(f.s.onBatch(f.a.id, f.batch(t, mid, 0, 9, f.a.priv))) }},
			{name: "batch/round beyond epoch", run: func() error { return handlerErr(f.s.onBatch(f.a.id, f.batch(t, mid, R, 1, f.a.priv))) }},
			{name: "batch/round far beyond epoch", run: func() error { return handlerErr(f.s.onBatch(f.a.id, f.batch(t, mid, 1<<20, 1, f.a.priv))) }},
			{name: "batch/wrong key", run: func() error { return handlerErr(f.s.onBatch(f.a.id, f.batch(t, mid, 0, 1, f.b.priv))) }},

			{name: "root/truncated", run: func() error { return handlerErr(f.s.onRoot(f.a.id, truncated(root(0, 1, f.a.priv)))) }},
			{name: "root/oversized", run: func() error { return handlerErr(f.s.onRoot(f.a.id, oversized(root(0, 1, f.a.priv)))) }},
			{name: "root/unknown sender", run: func() error { return handlerErr(f.s.onRoot(f.stranger.id, root(0, 1, f.stranger.priv))) }},
			{name: "root/round beyond epoch", run: func() error { return handlerErr(f.s.onRoot(f.a.id, root(R, 1, f.a.priv))) }},
			{name: "root/wrong key", run: func() error { return handlerErr(f.s.onRoot(f.a.id, root(0, 1, f.b.priv))) }},

			{name: "proposal/truncated", run: func() error { return handlerErr(f.s.onProposal(ctx, f.a.id, truncated(list(mid, 0, 1, 0)))) }},
			{name: "proposal/unknown epoch", run: func() error { return handlerErr(f.s.onProposal(ctx, f.a.id, list(&unknown, 0, 1, 0))) }},
			{name: "proposal/not the leader", run: func() error { return handlerErr(f.s.onProposal(ctx, f.b.id, list(mid, 0, 1, 0))) }},
			{name: "proposal/signed already", run: func() error { return handlerErr(f.s.onProposal(ctx, f.a.id, list(mid, 0, 1, 3))) }},
			{name: "proposal/too many rows", run: func() error {
				return handlerErr(f.s.onProposal(ctx, f.a.id, list(mid, 0, int(f.p.MaxRows)+1, 0)))
			}},

			{name: "listsig/truncated", run: func() error { return handlerErr(f.s.onListSig(f.b.id, truncated(lsig(mid, 0, 2, f.b.priv)))) }},
			{name: "listsig/unknown epoch", run: func() error { return handlerErr(f.s.onListSig(f.b.id, lsig(&unknown, 0, 2, f.b.priv))) }},
			{name: "listsig/another position", run: func() error { return handlerErr(f.s.onListSig(f.a.id, lsig(mid, 0, 2, f.a.priv))) }},
			{name: "listsig/position 0", run: func() error { return handlerErr(f.s.onListSig(f.a.id, lsig(mid, 0, 0, f.a.priv))) }},
			{name: "listsig/position beyond chain", run: func() error { return handlerErr(f.s.onListSig(f.b.id, lsig(mid, 0, 9, f.b.priv))) }},
			{name: "listsig/round beyond epoch", run: func() error { return handlerErr(f.s.onListSig(f.b.id, lsig(mid, R, 2, f.b.priv))) }},
			{name: "listsig/wrong key", run: func() error { return handlerErr(f.s.onListSig(f.b.id, lsig(mid, 0, 2, f.a.priv))) }},
			{name: "proposal/unsigned", run: func() error { return handlerErr(f.s.onProposal(ctx, f.a.id, list(mid, 0, 1, 0))) }},
			{name: "proposal/signed by another", run: func() error {
				rl := wire.RoundList{Epoch: mid.v.ID, Round: 0, Entries: []wire.ListEntry{{Len: 1}}}
				rl.Sigs = [][64]byte{mustSign(t, f.b.priv, proto.ListDigest(&rl))}
				return handlerErr(f.s.onProposal(ctx, f.a.id, rl.Marshal()))
			}},

			{name: "list/truncated", run: func() error { return handlerErr(f.s.onRoundList(f.a.id, truncated(list(mid, 0, 1, 3)))) }},
			{name: "list/unknown epoch", run: func() error { return handlerErr(f.s.onRoundList(f.a.id, list(&unknown, 0, 1, 3))) }},
			{name: "list/not the leader", run: func() error { return handlerErr(f.s.onRoundList(f.b.id, list(mid, 0, 1, 3))) }},
			{name: "list/wrong signatures", run: func() error { return handlerErr(f.s.onRoundList(f.a.id, list(mid, 0, 1, 3))) }},
			{name: "list/unsigned", run: func() error { return handlerErr(f.s.onRoundList(f.a.id, list(mid, 0, 1, 0))) }},

			{name: "pads/truncated", run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.a.id, truncated(pads(mid, 0, []uint32{1})))) }},
			{name: "pads/short", run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.a.id, make([]byte, 20))) }},
			{name: "pads/oversized", run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.a.id, oversized(pads(mid, 0, []uint32{1})))) }},
			{name: "pads/unknown epoch", run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.a.id, pads(&unknown, 0, []uint32{1}))) }},
			{name: "pads/unknown sender", run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.stranger.id, pads(mid, 0, []uint32{1}))) }},
			{name: "pads/from itself", run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.s.ID(), pads(mid, 0, []uint32{1}))) }},
			{name: "pads/another primary's slots", run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.a.id, pads(mid, 0, []uint32{0}))) }},
			{name: "pads/round outside window", run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.a.id, pads(mid, 1<<30, []uint32{1}))) }},
			{name: "pads/repeated", repeat: true, setup: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.a.id, pads(mid, 2, []uint32{1}))) },
				run: func() error { return handlerErr(f.s.ix.PIR.OnPadAnswers(f.a.id, pads(mid, 2, []uint32{1}))) }},
			{name: "root/repeated", repeat: true, setup: func() error { return handlerErr(f.s.onRoot(f.b.id, root(1, 3, f.b.priv))) },
				run: func() error { return handlerErr(f.s.onRoot(f.b.id, root(1, 3, f.b.priv))) }},

			{name: "round protocol/unknown sender", run: func() error {
				return handlerErr(f.s.handleRound(ctx, f.stranger.id, wire.TypeBatch, f.batch(t, mid, 0, 1, f.stranger.priv)))
			}},
		})
	})
}

func TestHostileIntake(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		f := newHostileFixture(t)
		led, mid, R := f.led, f.mid, f.p.Rounds
		size := mix.OnionSize(int(f.p.ChunkSize), int(f.p.K), 3)
		submit := func(e *sepoch, r, slot uint32, key ed25519.PrivateKey, n int) wire.Submit {
			sub := wire.Submit{Epoch: e.v.ID, Round: r, Slot: slot, Onion: make([]byte, n)}
			copy(sub.Sig[:], mix.SignSubmission(key, mix.EpochID(e.v.ID), uint64(r), slot, sub.Onion))
			return sub
		}
		subBody := func(sub wire.Submit) []byte { return bytes.Join(sub.Segments(), nil) }
		batchBody := func(e *sepoch, r uint32, subs ...wire.Submit) []byte {
			b := wire.SubmitBatch{Epoch: e.v.ID, Round: r, Subs: subs}
			return bytes.Join(b.Segments(), nil)
		}
		takeSubs := func(from peer.ID, body []byte) error {
			var b wire.SubmitBatch
			if err := b.Unmarshal(body, proto.GenericLimits()); err != nil {
				return err
			}
			return f.s.submits.takeSubs(from, body, &b)
		}
		query := func(e *sepoch, r uint32, slots ...uint32) []byte {
			q := wire.Rows{Epoch: e.v.ID, Round: r, Slots: slots}
			for range slots {
				for t := 0; t < int(f.p.K); t++ {
					q.Rows = append(q.Rows, make([]byte, 8))
				}
			}
			return q.Marshal()
		}
		pirErr := func(_ wire.Type, _ [][]byte, err error) error { return err }
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		unknown := sepoch{v: &proto.View{ID: [32]byte{0xEE}}}
		// mid: this server is slot 1's primary; led: slot 0's and S_0.
		good := submit(mid, 0, 1, f.clients[1], size)
		runHostile(t, f, []hostileCase{
			{name: "submit/repeated", repeat: true, setup: func() error { return handlerErr(f.s.submits.onSubmit(f.stranger.id, subBody(good))) },
				run: func() error { return handlerErr(f.s.submits.onSubmit(f.stranger.id, subBody(good))) }},
			{name: "submit/truncated", run: func() error { return handlerErr(f.s.submits.onSubmit(f.stranger.id, truncated(subBody(good)))) }},
			{name: "submit/oversized", run: func() error { return handlerErr(f.s.submits.onSubmit(f.stranger.id, oversized(subBody(good)))) }},
			{name: "submit/unknown epoch", run: func() error {
				return handlerErr(f.s.submits.onSubmit(f.stranger.id, subBody(submit(&unknown, 0, 1, f.clients[1], size))))
			}},
			{name: "submit/another primary's slot", run: func() error {
				return handlerErr(f.s.submits.onSubmit(f.stranger.id, subBody(submit(mid, 0, 0, f.clients[0], size))))
			}},
			{name: "submit/round beyond epoch", run: func() error {
				return handlerErr(f.s.submits.onSubmit(f.stranger.id, subBody(submit(mid, R, 1, f.clients[1], size))))
			}},
			{name: "submit/round outside window", run: func() error {
				return handlerErr(f.s.submits.onSubmit(f.stranger.id, subBody(submit(mid, R-1, 1, f.clients[1], size))))
			}},
			{name: "submit/wrong size", run: func() error {
				return handlerErr(f.s.submits.onSubmit(f.stranger.id, subBody(submit(mid, 0, 1, f.clients[1], size-1))))
			}},
			{name: "submit/wrong key", run: func() error {
				return handlerErr(f.s.submits.onSubmit(f.stranger.id, subBody(submit(mid, 0, 1, f.clients[2], size))))
			}},

			{name: "submit batch/truncated", run: func() error {
				return takeSubs(f.a.id, truncated(batchBody(led, 0, submit(led, 0, 1, f.clients[1], size))))
			}},
			{name: "submit batch/unknown epoch", run: func() error {
				return takeSubs(f.a.id, batchBody(&unknown, 0, submit(&unknown, 0, 1, f.clients[1], size)))
			}},
			{name: "submit batch/not S_0", run: func() error { return takeSubs(f.a.id, batchBody(mid, 0, submit(mid, 0, 0, f.clients[0], size))) }},
			{name: "submit batch/not the slot's primary", run: func() error {
				return takeSubs(f.b.id, batchBody(led, 0, submit(led, 0, 1, f.clients[1], size)))
			}},
			{name: "submit batch/round mismatch", run: func() error {
				return takeSubs(f.a.id, batchBody(led, 0, submit(led, 1, 1, f.clients[1], size)))
			}},
			{name: "submit batch/wrong key", run: func() error { return takeSubs(f.a.id, batchBody(led, 0, submit(led, 0, 1, f.clients[2], size))) }},
			{name: "submit batch/round outside window", run: func() error {
				return takeSubs(f.a.id, batchBody(led, R-1, submit(led, R-1, 1, f.clients[1], size)))
			}},

			{name: "query/short", run: func() error { return pirErr(f.s.ix.OnPIR(ctx, f.stranger.id, wire.TypeQuery, make([]byte, 20))) }},
			{name: "query/truncated", run: func() error {
				return pirErr(f.s.ix.OnPIR(ctx, f.stranger.id, wire.TypeQuery, truncated(query(mid, 0, 1))))
			}},
			{name: "query/oversized", run: func() error {
				return pirErr(f.s.ix.OnPIR(ctx, f.stranger.id, wire.TypeQuery, oversized(query(mid, 0, 1))))
			}},
			{name: "query/unknown epoch", run: func() error { return pirErr(f.s.ix.OnPIR(ctx, f.stranger.id, wire.TypeQuery, query(&unknown, 0, 1))) }},
			{name: "query/another primary's slot", run: func() error { return pirErr(f.s.ix.OnPIR(ctx, f.stranger.id, wire.TypeQuery, query(mid, 0, 0))) }},
			{name: "query/round outside window", run: func() error { return pirErr(f.s.ix.OnPIR(ctx, f.stranger.id, wire.TypeQuery, query(mid, 1<<30, 1))) }},

			{name: "register/truncated", run: func() error {
				return handlerErr(f.s.regs.OnClientRegister(ctx, f.stranger.id, truncated(f.clientRegister(t, f.open, f.clients[1]))))
			}},
			{name: "register/epoch not open", run: func() error {
				return handlerErr(f.s.regs.OnClientRegister(ctx, f.stranger.id, f.clientRegister(t, mid, f.clients[1])))
			}},
			{name: "register/unverifiable", run: func() error {
				return handlerErr(f.s.regs.OnClientRegister(ctx, f.stranger.id, f.clientRegister(t, f.open, f.clients[1])))
			}},
			{name: "wait list/truncated", run: func() error {
				return handlerErr(f.s.handleClient(ctx, f.stranger.id, wire.TypeWaitList, truncated((&wire.EpochRef{Epoch: mid.v.ID}).Marshal())))
			}},
			{name: "wait list/unknown epoch", run: func() error {
				return handlerErr(f.s.handleClient(ctx, f.stranger.id, wire.TypeWaitList, (&wire.EpochRef{Epoch: [32]byte{0xEE}}).Marshal()))
			}},
		})
	})
}

// register is a registration for e signed by key, whose mix part is not a
// registration (every check before the proof passes).
func (f *hostileFixture) register(t *testing.T, e *sepoch, key ed25519.PrivateKey) []byte {
	r := wire.Register{Epoch: e.v.ID, XKey: [32]byte{7}, Reg: make([]byte, 64)}
	copy(r.RegKey[:], key.Public().(ed25519.PublicKey))
	dg := proto.RegisterDigest(&r)
	copy(r.Sig[:], ed25519.Sign(key, dg[:]))
	return r.Marshal()
}

// clientRegister is register as a client sends it, with a valid
// long-term key signature.
func (f *hostileFixture) clientRegister(t *testing.T, e *sepoch, key ed25519.PrivateKey) []byte {
	var cr wire.ClientRegister
	if err := cr.Reg.Unmarshal(f.register(t, e, key), proto.GenericLimits()); err != nil {
		t.Fatal(err)
	}
	lt, err := NewLongTermKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cr.LTKey, cr.LTSig = lt.Public(), lt.Sign(cr.Reg.Epoch, cr.Reg.RegKey)
	return cr.Marshal()
}

// forwarded is register as primary pos signs it with pk.
func (f *hostileFixture) forwarded(t *testing.T, e *sepoch, key ed25519.PrivateKey, pos uint16, pk peerKey) wire.Forwarded {
	fw := wire.Forwarded{Primary: pos}
	if err := fw.Reg.Unmarshal(f.register(t, e, key), proto.GenericLimits()); err != nil {
		t.Fatal(err)
	}
	var err error
	if fw.Sig, err = proto.Sign(pk.priv, proto.ForwardDigest(&fw)); err != nil {
		t.Fatal(err)
	}
	return fw
}

func TestHostileEpochHandlers(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		f := newHostileFixture(t)
		led, mid := f.led, f.mid
		ref := func(id [32]byte) []byte { return (&wire.EpochRef{Epoch: id}).Marshal() }
		sorted := func(ids ...peer.ID) [][]byte {
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			var out [][]byte
			for _, id := range ids {
				out = append(out, []byte(id))
			}
			return out
		}
		prepare := func(number uint64, chain [][]byte) []byte {
			return (&wire.Prepare{Number: number, Params: f.p.Wire(), Chain: chain}).Marshal()
		}
		chain := sorted(f.s.ID(), f.a.id)
		head := peer.ID(chain[0])
		step := func(e *sepoch, S uint16) []byte {
			return (&wire.Step{Epoch: e.v.ID, S: S, Result: []byte("a step result")}).Marshal()
		}
		regList := func(e *sepoch) []byte { return (&wire.RegList{Epoch: e.v.ID}).Marshal() }
		// fwd is a registration for e forwarded and signed by a at chain
		// position 1 (led's chain).
		fwd := func(e *sepoch) []byte {
			fw := f.forwarded(t, e, f.clients[1], 1, f.a)
			return fw.Marshal()
		}
		ctx := context.Background()
		runHostile(t, f, []hostileCase{
			{name: "prepare/truncated", run: func() error { return handlerErr(f.s.onPrepare(head, truncated(prepare(0xD0, chain)))) }},
			{name: "prepare/oversized", run: func() error { return handlerErr(f.s.onPrepare(head, oversized(prepare(0xD0, chain)))) }},
			{name: "prepare/not the head", run: func() error { return handlerErr(f.s.onPrepare(f.b.id, prepare(0xD0, chain))) }},
			{name: "prepare/this server not in the chain", run: func() error {
				c := sorted(f.a.id, f.b.id)
				return handlerErr(f.s.onPrepare(peer.ID(c[0]), prepare(0xD0, c)))
			}},
			{name: "prepare/chain not sorted", run: func() error {
				c := [][]byte{chain[0], chain[1], chain[0]}
				return handlerErr(f.s.onPrepare(head, prepare(0xD0, c)))
			}},
			{name: "prepare/stranger in the chain", run: func() error {
				c := sorted(f.s.ID(), f.a.id, f.stranger.id)
				return handlerErr(f.s.onPrepare(peer.ID(c[0]), prepare(0xD0, c)))
			}},
			{name: "prepare/replayed number", run: func() error { return handlerErr(f.s.onPrepare(head, prepare(0xC0, chain))) }},
			{name: "prepare/bad parameters", run: func() error {
				p := f.p.Wire()
				p.K = 0
				return handlerErr(f.s.onPrepare(head, (&wire.Prepare{Number: 0xD0, Params: p, Chain: chain}).Marshal()))
			}},

			{name: "sign request/truncated", run: func() error { return handlerErr(f.s.onSignReq(f.a.id, truncated(f.open.v.Desc.Marshal()))) }},
			{name: "sign request/garbage", run: func() error { return handlerErr(f.s.onSignReq(f.a.id, bytes.Repeat([]byte{0xff}, 200))) }},
			{name: "signed/truncated", run: func() error { return handlerErr(f.s.onSigned(f.a.id, truncated(f.open.v.Desc.Marshal()))) }},
			{name: "signed/garbage", run: func() error { return handlerErr(f.s.onSigned(f.a.id, bytes.Repeat([]byte{0xff}, 200))) }},

			{name: "registration list/truncated", run: func() error { return handlerErr(f.s.regs.OnRegList(f.a.id, truncated(regList(mid)))) }},
			{name: "registration list/unknown epoch", run: func() error {
				return handlerErr(f.s.regs.OnRegList(f.a.id, (&wire.RegList{Epoch: [32]byte{0xEE}}).Marshal()))
			}},
			{name: "registration list/not the leader", run: func() error { return handlerErr(f.s.regs.OnRegList(f.b.id, regList(mid))) }},
			{name: "registration list/not signed by its primary", run: func() error {
				var rl wire.RegList
				rl.Epoch = mid.v.ID
				rl.Regs = []wire.Forwarded{f.forwarded(t, mid, f.clients[0], 2, f.a)}
				return handlerErr(f.s.regs.OnRegList(f.a.id, rl.Marshal()))
			}},

			{name: "close/truncated", run: func() error { return handlerErr(f.s.regs.OnClose(f.a.id, truncated(ref(f.open.v.ID)))) }},
			{name: "close/unknown epoch", run: func() error { return handlerErr(f.s.regs.OnClose(f.a.id, ref([32]byte{0xEE}))) }},
			{name: "close/not the leader", run: func() error { return handlerErr(f.s.regs.OnClose(f.b.id, ref(f.open.v.ID))) }},

			{name: "forwarded registration/truncated", run: func() error {
				return handlerErr(f.s.regs.OnForwarded(f.a.id, truncated(fwd(led))))
			}},
			{name: "forwarded registration/unknown epoch", run: func() error {
				e := &sepoch{v: &proto.View{ID: [32]byte{0xEE}}}
				return handlerErr(f.s.regs.OnForwarded(f.a.id, fwd(e)))
			}},
			{name: "forwarded registration/not led here", run: func() error {
				return handlerErr(f.s.regs.OnForwarded(f.a.id, fwd(f.open)))
			}},
			{name: "forwarded registration/not signed by its primary", run: func() error {
				fw := f.forwarded(t, led, f.clients[1], 1, f.b)
				return handlerErr(f.s.regs.OnForwarded(f.a.id, fw.Marshal()))
			}},

			{name: "step/repeated", repeat: true, setup: func() error { return handlerErr(f.s.onStep(f.a.id, step(mid, 0))) },
				run: func() error { return handlerErr(f.s.onStep(f.a.id, step(mid, 0))) }},
			{name: "step/truncated", run: func() error { return handlerErr(f.s.onStep(f.a.id, truncated(step(mid, 0)))) }},
			{name: "step/unknown epoch", run: func() error {
				return handlerErr(f.s.onStep(f.a.id, (&wire.Step{Epoch: [32]byte{0xEE}}).Marshal()))
			}},
			{name: "step/wrong sender", run: func() error { return handlerErr(f.s.onStep(f.b.id, step(mid, 0))) }},
			{name: "step/unknown sender", run: func() error { return handlerErr(f.s.onStep(f.stranger.id, step(mid, 0))) }},
			{name: "step/position beyond chain", run: func() error { return handlerErr(f.s.onStep(f.a.id, step(mid, 7))) }},

			{name: "route/truncated", run: func() error {
				return handlerErr(f.s.onRoute(ctx, f.a.id, truncated((&wire.Route{Epoch: mid.v.ID, S: 1}).Marshal())))
			}},
			{name: "route/unknown epoch", run: func() error {
				return handlerErr(f.s.onRoute(ctx, f.a.id, (&wire.Route{Epoch: [32]byte{0xEE}, S: 1}).Marshal()))
			}},
			{name: "route/unknown sender", run: func() error {
				return handlerErr(f.s.onRoute(ctx, f.stranger.id, (&wire.Route{Epoch: mid.v.ID, S: 1}).Marshal()))
			}},
			{name: "route/no share fault", run: func() error {
				return handlerErr(f.s.onRoute(ctx, f.a.id, (&wire.Route{Epoch: mid.v.ID, S: 1}).Marshal()))
			}},
			{name: "hello/truncated", run: func() error {
				return handlerErr(f.s.hellos.OnHello(ctx, f.stranger.id, wire.TypeHello, truncated(f.s.hellos.Hello().Marshal())))
			}},
			{name: "hello/garbage", run: func() error {
				return handlerErr(f.s.hellos.OnHello(ctx, f.stranger.id, wire.TypeHello, bytes.Repeat([]byte{0xff}, 64)))
			}},
			{name: "get chunk/truncated", run: func() error {
				return handlerErr(f.s.handleRound(ctx, f.s.ID(), wire.TypeGetChunk, truncated((&wire.Chunk{ID: [32]byte{1}}).Marshal())))
			}},
			{name: "get chunk/unknown chunk", run: func() error {
				return handlerErr(f.s.handleRound(ctx, f.s.ID(), wire.TypeGetChunk, (&wire.Chunk{ID: [32]byte{1}}).Marshal()))
			}},
			{name: "abort/truncated", run: func() error {
				return handlerErr(f.s.handleEpoch(ctx, f.a.id, wire.TypeAbort, truncated(ref(mid.v.ID))))
			}},
			{name: "abort/unknown sender", run: func() error { return handlerErr(f.s.handleEpoch(ctx, f.stranger.id, wire.TypeAbort, ref(mid.v.ID))) }},
			{name: "epoch protocol/unknown type", run: func() error { return handlerErr(f.s.handleEpoch(ctx, f.a.id, wire.TypeBatch, ref(mid.v.ID))) }},
		})
	})
}
