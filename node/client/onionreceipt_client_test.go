package client

import (
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestTakeReceiptChecks: a client keeps its primary's receipt of the onion
// it sent, and no other: one tampered, signed by another chain server,
// naming another position, round, slot or onion, or of another epoch is
// dropped (the client then holds nothing to show for that round).
func TestTakeReceiptChecks(t *testing.T) {
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range 3 {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		privs, chain = append(privs, priv), append(chain, id)
	}
	c := &Client{log: quietLogger()}
	e := &cepoch{c: c, v: &proto.View{ID: [32]byte{7}, Chain: chain}, slot: 4, pidx: 1}
	sub := &wire.Submit{Epoch: e.v.ID, Round: 3, Slot: 4, Onion: []byte("the onion")}
	good := func() wire.OnionReceipt {
		return wire.OnionReceipt{Epoch: e.v.ID, Round: 3, Slot: 4, Server: 1, Digest: mix.SubmissionDigest(sub.Onion)}
	}
	sign := func(r wire.OnionReceipt, by int) []byte {
		r.Sig, _ = proto.Sign(privs[by], proto.OnionReceiptDigest(&r))
		return r.Marshal()
	}
	for _, x := range []struct {
		name string
		rep  []byte
	}{
		{"empty (an Ack)", nil},
		{"tampered after signing", func() []byte { b := sign(good(), 1); b[len(b)-70] ^= 1; return b }()},
		{"signed by another chain server", sign(good(), 2)},
		{"naming another position", func() []byte { r := good(); r.Server = 2; return sign(r, 2) }()},
		{"of another round", func() []byte { r := good(); r.Round = 4; return sign(r, 1) }()},
		{"of another slot", func() []byte { r := good(); r.Slot = 5; return sign(r, 1) }()},
		{"of another onion", func() []byte { r := good(); r.Digest[0] ^= 1; return sign(r, 1) }()},
		{"of another epoch", func() []byte { r := good(); r.Epoch[0] ^= 1; return sign(r, 1) }()},
	} {
		e.takeReceipt(sub, mix.SubmissionDigest(sub.Onion), x.rep)
		if len(e.onionReceipts) != 0 {
			t.Errorf("%s: kept", x.name)
			e.onionReceipts = nil
		}
	}
	e.takeReceipt(sub, mix.SubmissionDigest(sub.Onion), sign(good(), 1))
	if _, ok := e.onionReceipts[3]; !ok {
		t.Fatal("the primary's receipt of the onion was not kept")
	}
	e.onionDone(3)
	if len(e.onionReceipts) != 0 {
		t.Error("a listed round's receipt was kept")
	}
}
