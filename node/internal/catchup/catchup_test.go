package catchup

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// fakeServer is a server without a network: its certificates, and one
// peer whose replies are a function of the request.
type fakeServer struct {
	self    peer.ID
	peers   []peer.ID
	top     uint64
	certs   map[uint64][]byte
	running map[[32]byte]bool
	reply   func(p peer.ID, r transport.Request) ([]byte, error)
	calls   int
	// rounds is R of the epochs' descriptors (1 if unset).
	rounds uint32
}

func (f *fakeServer) Self() peer.ID            { return f.self }
func (f *fakeServer) Chain() []peer.ID         { return append([]peer.ID{f.self}, f.peers...) }
func (f *fakeServer) Known(peer.ID) bool       { return true }
func (f *fakeServer) Running(id [32]byte) bool { return f.running[id] }
func (f *fakeServer) EpochRounds(context.Context, uint64, [32]byte, []peer.ID) (uint32, bool) {
	return max(f.rounds, 1), true
}
func (f *fakeServer) CertTop() uint64 { return f.top }
func (f *fakeServer) Certs(uint64) (uint64, map[uint64][]byte) {
	return f.top, f.certs
}
func (f *fakeServer) MissingCert(recent uint64) (uint64, bool) {
	return MissingCert(f.top, recent, func(n uint64) bool { return f.certs[n] != nil })
}
func (f *fakeServer) CheckCert(*wire.Cert) error { return errors.New("no certificates here") }
func (f *fakeServer) KeepCert(*wire.Cert) bool   { return false }
func (f *fakeServer) SyncCerts(context.Context, peer.ID) (bool, bool, bool) {
	return false, true, true
}
func (f *fakeServer) Call(_ context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	f.calls++
	if f.reply == nil {
		return nil, errors.New("away")
	}
	return f.reply(p, r)
}

func key(t *testing.T) (crypto.PrivKey, peer.ID) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return priv, id
}

// epoch is a certified final epoch of one round, published by a chain
// of one server (priv), with one chunk.
type epoch struct {
	id    [32]byte
	cert  []byte
	rec   []byte
	list  []byte
	chunk []byte
}

func newEpoch(t *testing.T, n uint64, priv crypto.PrivKey, p peer.ID, sign bool) epoch {
	t.Helper()
	var e epoch
	e.id = sha256.Sum256([]byte{byte(n)})
	e.chunk = []byte("a published chunk")
	rl := wire.RoundList{Epoch: e.id, Published: [][32]byte{sha256.Sum256(e.chunk)}}
	c := wire.Closing{Epoch: e.id, Rounds: []wire.ClosingRound{{State: wire.ClosedPublished, List: proto.ListDigest(&rl)}}}
	if sign {
		sig, err := proto.Sign(priv, proto.ClosingDigest(&c))
		if err != nil {
			t.Fatal(err)
		}
		c.Sigs = [][64]byte{sig}
	}
	e.rec, e.list = c.Marshal(), rl.Marshal()
	e.cert = (&wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: e.id, Chain: [][]byte{[]byte(p)}}).Marshal()
	return e
}

// serve answers as a server whose index log holds e's record.
func (e epoch) serve(p peer.ID, r transport.Request) ([]byte, error) {
	switch r.Type {
	case wire.TypeIndexReq:
		return (&wire.Index{Next: 1, Closings: [][]byte{e.rec}}).Marshal(), nil
	case wire.TypeListReq:
		return e.list, nil
	case wire.TypeGetChunk:
		return (&wire.Chunk{ID: sha256.Sum256(e.chunk), Data: e.chunk}).Marshal(), nil
	}
	return nil, errors.New("not served")
}

func newCatchup(f *fakeServer) (*Catchup, chunks.Store) {
	st := chunks.NewMemStore()
	var cu Catchup
	tun := (&proto.Tunables{}).WithDefaults()
	tun.CatchupGap = 0
	cu.Init(f, st, slog.New(slog.DiscardHandler), &tun)
	return &cu, st
}

// TestFromTakesSignedRecord: a record signed by its certified chain is
// taken with its round's chunk, and the cursor moves past its page; a
// record short of a signature takes nothing, leaves the cursor and
// shuns its sender.
func TestFromTakesSignedRecord(t *testing.T) {
	priv, signer := key(t)
	_, self := key(t)
	for _, signed := range []bool{true, false} {
		e := newEpoch(t, 1, priv, signer, signed)
		f := &fakeServer{self: self, peers: []peer.ID{signer}, top: 1 + Recent, certs: map[uint64][]byte{1: e.cert}, reply: e.serve}
		cu, st := newCatchup(f)
		want, old := cu.Lacking()
		if len(want) != 1 || !old[e.id] {
			t.Fatalf("lacking %d epochs (old %v), want the certified one", len(want), old[e.id])
		}
		cu.From(context.Background(), signer, want)
		_, errRec := st.Closing(e.id)
		held, _ := st.HasChunk(sha256.Sum256(e.chunk))
		cur, _ := st.CatchupCursor([]byte(signer))
		if signed && (errRec != nil || !held || len(want) != 0 || cur != 1 || cu.Shunned(signer)) {
			t.Fatalf("signed record: kept %v, chunk %v, %d lacking, cursor %d, shunned %v", errRec == nil, held, len(want), cur, cu.Shunned(signer))
		}
		if !signed && (errRec == nil || held || len(want) != 1 || cur != 0 || !cu.Shunned(signer)) {
			t.Fatalf("unsigned record: kept %v, chunk %v, %d lacking, cursor %d, shunned %v", errRec == nil, held, len(want), cur, cu.Shunned(signer))
		}
	}
}

// TestLackingSkipsAndGivesUp: an epoch whose record is kept or that runs
// here is not lacking, a recent one is not due, and one no peer completes
// is given up after catchupTries passes (certificates of 1 to 4, the
// newest number 5).
func TestLackingSkipsAndGivesUp(t *testing.T) {
	priv, signer := key(t)
	_, self := key(t)
	f := &fakeServer{self: self, peers: []peer.ID{signer}, top: 5, certs: map[uint64][]byte{}, running: map[[32]byte]bool{}}
	var es []epoch
	for n := uint64(1); n <= 4; n++ {
		es = append(es, newEpoch(t, n, priv, signer, true))
		f.certs[n] = es[n-1].cert
	}
	f.running[es[1].id] = true
	cu, st := newCatchup(f)
	if err := st.PutClosing(es[0].id, es[0].rec); err != nil {
		t.Fatal(err)
	}
	want, old := cu.Lacking()
	if len(want) != 2 || want[es[2].id] == nil || want[es[3].id] == nil || len(old) != 1 || !old[es[2].id] {
		t.Fatalf("lacking %d (old %d), want epochs 3 and 4, 3 due", len(want), len(old))
	}
	for i := range catchupTries {
		cu.Pass(context.Background())
		if want, _ := cu.Lacking(); (want[es[2].id] == nil) != (i == catchupTries-1) {
			t.Fatalf("after pass %d: epoch 3 lacking %v", i+1, want[es[2].id] != nil)
		}
	}
	if f.calls == 0 {
		t.Fatal("no pass asked the peer")
	}
}

// TestMissingCert: the lowest number of the window without a
// certificate, the newest recent ones left out.
func TestMissingCert(t *testing.T) {
	have := map[uint64]bool{1: true, 2: true, 4: true, 5: true}
	has := func(n uint64) bool { return have[n] }
	if n, ok := MissingCert(5, 0, has); !ok || n != 3 {
		t.Fatalf("got %d %v, want 3", n, ok)
	}
	if _, ok := MissingCert(5, 3, has); ok {
		t.Fatal("3 is among the 3 newest: not missing")
	}
	if n, ok := MissingCert(Window+10, 0, func(n uint64) bool { return n > 20 }); !ok || n != 11 {
		t.Fatalf("got %d %v, want the window's first number 11", n, ok)
	}
}

// TestShunBounded: the peers left alone stay at most maxShunned, each
// shunned within its time; once their time passed, the next shun prunes
// them. Before, every peer ever shunned stayed (2·maxShunned here).
func TestShunBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cu, _ := newCatchup(&fakeServer{})
		why := errors.New("bad reply")
		for i := range 2 * maxShunned {
			cu.shunPeer(peer.ID(fmt.Sprintf("peer %d", i)), why)
			time.Sleep(time.Second)
		}
		newest := peer.ID(fmt.Sprintf("peer %d", 2*maxShunned-1))
		if n := len(cu.shun); n != maxShunned || !cu.Shunned(newest) || cu.Shunned("peer 0") {
			t.Fatalf("%d peers held, newest shunned %v, oldest %v; want %d, the newest", n, cu.Shunned(newest), cu.Shunned("peer 0"), maxShunned)
		}
		time.Sleep(cu.T.CatchupShun)
		cu.shunPeer("late", why)
		if n := len(cu.shun); n != 1 || cu.Shunned(newest) {
			t.Fatalf("%d peers held once the others' time passed, want 1", n)
		}
	})
}

// TestListsTakeEveryRoundOfTheEpoch: an epoch without a closing record
// is taken from the lists of every round of its own descriptor (R = 3),
// not of this server's setting. Before, the fallback asked the rounds of
// the server's own parameters (R = 1 in the fake): one of three chunks.
func TestListsTakeEveryRoundOfTheEpoch(t *testing.T) {
	priv, signer := key(t)
	_, self := key(t)
	const R = 3
	id := sha256.Sum256([]byte("an epoch of three rounds"))
	var lists [R][]byte
	var chunks [R][]byte
	for r := range R {
		chunks[r] = []byte(fmt.Sprintf("chunk of round %d", r))
		rl := wire.RoundList{Epoch: id, Round: uint32(r), Published: [][32]byte{sha256.Sum256(chunks[r])}}
		sig, err := proto.Sign(priv, proto.ListDigest(&rl))
		if err != nil {
			t.Fatal(err)
		}
		rl.Sigs = [][64]byte{sig}
		lists[r] = rl.Marshal()
	}
	reply := func(_ peer.ID, r transport.Request) ([]byte, error) {
		switch r.Type {
		case wire.TypeIndexReq:
			return (&wire.Index{}).Marshal(), nil // no closing record
		case wire.TypeListReq:
			var ref wire.EpochRef
			if err := ref.Unmarshal(r.Body); err != nil || ref.Round >= R {
				return nil, errors.New("no such round")
			}
			return lists[ref.Round], nil
		case wire.TypeGetChunk:
			var c wire.Chunk
			if err := c.Unmarshal(r.Body, proto.MaxChunkSize); err != nil {
				return nil, err
			}
			for _, b := range chunks {
				if sha256.Sum256(b) == c.ID {
					return (&wire.Chunk{ID: c.ID, Data: b}).Marshal(), nil
				}
			}
		}
		return nil, errors.New("not served")
	}
	cert := (&wire.Cert{Kind: wire.CertFinal, Number: 1, Epoch: id, Chain: [][]byte{[]byte(signer)}}).Marshal()
	f := &fakeServer{self: self, peers: []peer.ID{signer}, top: 1 + Recent, certs: map[uint64][]byte{1: cert}, reply: reply, rounds: R}
	cu, st := newCatchup(f)
	for range 2 { // the second pass takes the lists
		cu.Pass(context.Background())
	}
	for r, b := range chunks {
		if ok, _ := st.HasChunk(sha256.Sum256(b)); !ok {
			t.Fatalf("round %d's chunk not taken", r)
		}
	}
}
