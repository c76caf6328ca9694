package proto

import (
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestCheckedPoolOldLayout (§6.3 v3): a window item kept by an older
// build carries a pool of the layout before the manifest ids, whose
// digest its record signed. It still checks, as a pool that names no
// ids (IDLess), so that after an upgrade a client holds the window and
// registers; a current pool of the same sample does not match that
// record. Before the layouts were told apart, no pool of the old record
// checked and the window was not held.
func TestCheckedPoolOldLayout(t *testing.T) {
	var (
		keys []crypto.PrivKey
		d    wire.Descriptor
	)
	d.Number, d.Params.Rounds = 5, 2
	for range 2 {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p, err := peer.IDFromPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
		d.Group = append(d.Group, wire.GroupEntry{PeerID: []byte(p)})
	}
	id := [32]byte{0xe1}
	old := wire.DecoyPool{Version: wire.PoolV1, Epoch: id, Total: 2, Sample: []wire.PoolPair{{Pos: 1, ID: [32]byte{1}}, {Pos: 0, ID: [32]byte{2}}}}
	c := wire.Closing{Epoch: id, Rounds: []wire.ClosingRound{{State: wire.ClosedPublished, List: [32]byte{3}}, {State: wire.ClosedPublished, List: [32]byte{4}}}, Pairs: 2, Pool: PoolDigest(&old)}
	dg := ClosingDigest(&c)
	for _, k := range keys {
		s, err := k.Sign(dg[:])
		if err != nil {
			t.Fatal(err)
		}
		c.Sigs = append(c.Sigs, [64]byte(s))
	}
	cur := old
	cur.Version = wire.PoolV2
	item := wire.WindowItem{Number: 5, Epoch: id, Closing: c.Marshal()}
	item.Pool = cur.Marshal()
	if pe, _, _, _ := CheckedPool(&d, id, []*wire.WindowItem{&item}, &dg); pe != nil {
		t.Fatal("a current-layout pool checked against a record signed over the old layout")
	}
	item.Pool = old.Marshal()
	pe, _, _, _ := CheckedPool(&d, id, []*wire.WindowItem{&item}, &dg)
	if pe == nil {
		t.Fatal("an old-layout pool does not check against its record")
	}
	if !pe.IDLess || pe.Manifests != nil || pe.Total != 2 || len(pe.Sample) != 2 {
		t.Fatalf("checked as %+v, want an id-less pool of 2 pairs", pe)
	}
}
