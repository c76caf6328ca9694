//go:build riffletest

package node

import (
	"bytes"
	"crypto/rand"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/window"
)

// windowChain is a made-up run of epochs 1..top for the window's unit
// tests: each descriptor's previous certificate names the one before
// (final unless kinds says otherwise), and every descriptor's chain is
// the keys', so that records signed by them check.
type windowChain struct {
	keys  []crypto.PrivKey
	descs map[uint64]*wire.Descriptor
	certs map[uint64]wire.Cert
}

func newWindowChain(t *testing.T, top uint64, kinds map[uint64]uint8) *windowChain {
	t.Helper()
	wc := &windowChain{descs: map[uint64]*wire.Descriptor{}, certs: map[uint64]wire.Cert{}}
	var group []wire.GroupEntry
	for range 3 {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(k)
		wc.keys = append(wc.keys, k)
		group = append(group, wire.GroupEntry{PeerID: []byte(id)})
	}
	var prev wire.Cert
	for n := uint64(1); n <= top; n++ {
		d := &wire.Descriptor{Number: n, Params: testParams(2).Wire(), Group: group, Previous: prev}
		wc.descs[n] = d
		kind := wire.CertFinal
		if k, ok := kinds[n]; ok {
			kind = k
		}
		prev = wire.Cert{Kind: kind, Number: n, Epoch: proto.EpochID(d), Chain: [][]byte{{1}}}
		wc.certs[n] = prev
	}
	return wc
}

// item is epoch n's descriptor without clients, as a window item.
func (wc *windowChain) item(n uint64) wire.WindowItem {
	d := wc.descs[n]
	return wire.WindowItem{Number: n, Epoch: proto.EpochID(d), Group: window.GroupBytes(d)}
}

// record is a closing record of epoch n signed by its whole chain, with
// round 1 published (a list of the given ids) or, if ids is empty, never
// come, and the pool it signs.
func (wc *windowChain) record(t *testing.T, n uint64, ids ...byte) (rec, pool []byte, dg [32]byte) {
	t.Helper()
	id := proto.EpochID(wc.descs[n])
	c := &wire.Closing{Epoch: id, Rounds: make([]wire.ClosingRound, 2)}
	c.Rounds[0] = wire.ClosingRound{State: wire.ClosedPublished, List: [32]byte{1}}
	pairs := []wire.PoolPair{{Pos: 0, ID: [32]byte{0xaa}}}
	if len(ids) > 0 {
		c.Rounds[1] = wire.ClosingRound{State: wire.ClosedPublished, List: [32]byte{2, ids[0]}}
		for i, x := range ids {
			pairs = append(pairs, wire.PoolPair{Pos: uint32(i), ID: [32]byte{x}})
		}
	}
	p := proto.SamplePool(c, pairs)
	c.Pairs, c.Pool = p.Total, proto.PoolDigest(p)
	dg = proto.ClosingDigest(c)
	for _, k := range wc.keys {
		sg, err := proto.Sign(k, dg)
		if err != nil {
			t.Fatal(err)
		}
		c.Sigs = append(c.Sigs, sg)
	}
	return c.Marshal(), p.Marshal(), dg
}

// windowServer is a server with a store and the certificates given.
func windowServer(t *testing.T, certs ...wire.Cert) *Server {
	s := storeServer(t)
	for _, c := range certs {
		s.cert.Put(c.Number, c.Marshal(), c.Number)
	}
	return s
}

func itemNumbers(items []wire.WindowItem) []uint64 {
	var out []uint64
	for _, it := range items {
		out = append(out, it.Number)
	}
	return out
}

// TestWindowServedAsWalked (issue 26, F1): what a member serves as a
// number's window is the walk it checked for that number's Prepare, not
// what its own certificates name. Member A keeps a timeout of K (the
// first certificate of a number wins) and takes the Prepare of K+1, whose
// previous certificate is K's abort: its walk goes through K's
// descriptor, which the leader gave. Before, windowItems followed A's own
// certificates and skipped K, its certificate being a timeout: corrupt
// servers that withheld K's descriptor from one client broke its walk at
// K, and it sat the number out. Fails with windowItems' old rule (the
// epochs A's own certificates name) restored: K+1's window then lacks K
// and the number before it, K+2's lacks K.
func TestWindowServedAsWalked(t *testing.T) {
	const K = 5
	wc := newWindowChain(t, K, nil)
	timeout := wire.Cert{Kind: wire.CertTimeout, Number: K, Chain: [][]byte{{1}}}
	a := windowServer(t, wc.certs[K-2], wc.certs[K-1], timeout)
	abort := wc.certs[K]
	abort.Kind = wire.CertAbort
	// What the leader gives: the descriptors of 1..K.
	var leader []wire.WindowItem
	for n := uint64(1); n <= K; n++ {
		leader = append(leader, wc.item(n))
	}
	p := &wire.Prepare{Number: K + 1, Previous: abort}
	got := append(a.win.Held(K+1), leader...)
	walk, err := a.win.Check(p, got, "", true)
	if err != nil {
		t.Fatal(err)
	}
	a.win.KeepWalk(K+1, walk)
	for _, number := range []uint64{K + 1, K + 2} {
		served := a.win.Served(number)
		if !slices.Contains(itemNumbers(served), K) || !slices.Contains(itemNumbers(served), K-1) {
			t.Errorf("the window of %d served by a member that keeps K's timeout: epochs %v, want %d and %d among them", number, itemNumbers(served), K, K-1)
		}
	}
	// A client's walk from K+1's descriptor over what A serves alone
	// reaches as far as the member's did.
	d := &wire.Descriptor{Number: K + 1, Previous: abort}
	if w := proto.WalkWindow(d, a.win.Served(K+1)); len(w.Items) != len(walk) {
		t.Errorf("a walk over what A serves reached %v, A's own walk %d epochs", itemNumbers(w.Items), len(walk))
	}
}

// TestWindowServedByRecord (issue 26, F2): a member that keeps its own
// closing record Y of an epoch and takes a Prepare pinning another valid
// record X of it serves X with X's pool, what it checked. Before, the
// item of the epoch was one per (number, epoch): the walk's X was not
// kept beside Y, or kept with X's pool while Y was served from the
// store's closing records, so the member served a record and pool that
// matched neither the pin nor each other, and every client's window of
// that number lacked the epoch. Fails with windowItems' old rule
// restored: no record of the pinned digest is served.
func TestWindowServedByRecord(t *testing.T) {
	const E = 4 // the epoch with two records; N = 6 pins it
	wc := newWindowChain(t, E+1, nil)
	s := windowServer(t, wc.certs[E], wc.certs[E+1])
	recY, poolY, _ := wc.record(t, E)
	recX, poolX, dgX := wc.record(t, E, 7, 8)
	id := proto.EpochID(wc.descs[E])
	// Y is this server's own record, X the leader's pin.
	if err := s.store.PutClosing(id, recY); err != nil {
		t.Fatal(err)
	}
	own := wc.item(E)
	own.Closing, own.Pool = recY, poolY
	s.win.Keep([]wire.WindowItem{own})
	pinned := wc.item(E)
	pinned.Closing, pinned.Pool = recX, poolX
	p := &wire.Prepare{Number: E + 2, Previous: wc.certs[E+1], Window: []wire.WindowRef{{Number: E, Epoch: id, Closing: dgX}}}
	// The walk goes on below the pin to the budgets' depth.
	got := append(s.win.Held(E+2), wc.item(E+1), pinned, wc.item(E-1), wc.item(E-2), wc.item(E-3))
	walk, err := s.win.Check(p, got, "", true)
	if err != nil {
		t.Fatal(err)
	}
	s.win.KeepWalk(E+2, walk)
	d := &wire.Descriptor{Number: E + 2, Previous: wc.certs[E+1], Window: p.Window}
	if w, ok := proto.ResolveWindow(d, s.win.Served(E+2)); !ok {
		t.Errorf("the window of %d over what the member serves lacks %d pinned epochs", E+2, w.Missing)
	}
	// Where nothing pins a record, the epoch's own item stays Y with Y's
	// pool.
	if it := s.win.ServedItem(window.Ref{Number: E, Epoch: id}, E+2); !bytes.Equal(it.Closing, recY) || !bytes.Equal(it.Pool, poolY) {
		t.Error("the epoch's own item is not this server's record with its pool")
	}
}

// TestCheckedPoolEveryRecord (issue 26, F2): a window item may carry a
// record with another record's pool (a server holding two records of one
// epoch). The check takes a record and a pool that match each other from
// any candidates, trying every record: before, it took the first record
// that verified and gave up if no pool matched that one, though another
// candidate's record and pool matched.
func TestCheckedPoolEveryRecord(t *testing.T) {
	const E = 3
	wc := newWindowChain(t, E, nil)
	recY, _, _ := wc.record(t, E)
	recX, poolX, dgX := wc.record(t, E, 7)
	_, poolZ, _ := wc.record(t, E, 9)
	mixed := wc.item(E)
	mixed.Closing, mixed.Pool = recY, poolZ // a record with a pool of neither
	good := wc.item(E)
	good.Closing, good.Pool = recX, poolX
	id := proto.EpochID(wc.descs[E])
	pe, rec, _, _ := proto.CheckedPool(wc.descs[E], id, []*wire.WindowItem{&mixed, &good}, nil)
	if pe == nil || proto.ClosingDigest(rec) != dgX {
		t.Fatal("no record and pool taken from two candidates, the second of which match")
	}
}
