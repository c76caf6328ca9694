package blame

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestNoListChargesSigner: an abort of kind AbortNoList (no final list
// of a published round by its due) over a chain of four charges its
// signer, whatever is attested: no honest server signs one, and the
// others' true attestations that no list came by their due charged an
// honest S_0 whose list a corrupt signer held back (the rev41b review;
// before, the first two cases charged S_0). Another kind's attestation
// is refused.
func TestNoListChargesSigner(t *testing.T) {
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range 4 {
		priv, err := newKey()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		privs, chain = append(privs, priv), append(chain, id)
	}
	epoch := [32]byte{7}
	ctx := Context{Epoch: epoch, Chain: chain, Final: true}
	const num, round = 9, 6
	abort := func(signer int) []byte {
		a := &wire.Abort{Epoch: epoch, Number: num, Round: round, Kind: wire.AbortNoList, Signer: []byte(chain[signer]), Reason: []byte("no list")}
		a.Sig, _ = proto.Sign(privs[signer], proto.AbortDigest(a))
		return a.Marshal()
	}
	attest := func(by int, kind uint8, lacking uint64) wire.Attest {
		a := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: num, Kind: kind, Round: round}, Lacking: lacking, Signer: uint16(by)}
		a.Sig, _ = proto.Sign(privs[by], AttestDigest(&a))
		return a
	}
	none := func(by int) wire.Attest { return attest(by, wire.AbortNoList, 1) }
	held := func(by int) wire.Attest { return attest(by, wire.AbortNoList, 0) }
	for _, c := range []struct {
		name    string
		signer  int
		attests []wire.Attest
		want    peer.ID
	}{
		{"two of the three others lack it", 1, []wire.Attest{none(1), none(2)}, chain[1]},
		{"all three", 3, []wire.Attest{none(1), none(2), none(3)}, chain[3]},
		{"the signer alone", 1, []wire.Attest{none(1)}, chain[1]},
		{"the others hold it", 1, []wire.Attest{none(1), held(2), held(3)}, chain[1]},
		{"S_0's own word", 2, []wire.Attest{none(2), none(0), held(1), held(3)}, chain[2]},
		{"no attestations", 3, nil, chain[3]},
		{"signed by S_0", 0, nil, chain[0]},
		{"an equivocator", 1, []wire.Attest{none(1), none(2), held(2)}, chain[1]},
	} {
		got, _, err := ChargeOf(&wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(c.signer), Attests: c.attests}, ctx)
		if err != nil || got != c.want {
			t.Errorf("%s: charged %v (%v), want %v", c.name, got, err, c.want)
		}
	}
	// Nor is it held for attestations to come: a round nobody attests
	// (past the epoch's rounds), under a final descriptor or none,
	// charged nobody for good (the rev42a review, F1).
	for _, final := range []bool{true, false} {
		c := ctx
		c.Final = final
		if got, _, err := ChargeOf(&wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(1)}, c); err != nil || got != chain[1] {
			t.Errorf("final %v, no attestation: charged %v (%v), want its signer", final, got, err)
		}
	}
	// A missing publication's attestations back no missing list.
	ev := &wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(1), Attests: []wire.Attest{none(1), attest(2, wire.AbortNoPub, 1)}}
	if _, _, err := ChargeOf(ev, ctx); err == nil {
		t.Error("an attestation of another kind was taken")
	}
}

// TestListDue: a round's list is due at the stale instant, three round
// limits past its publication's due, and given up two round limits
// later; nothing while the round is not open.
func TestListDue(t *testing.T) {
	d := Dues{Limit: 4 * time.Second}
	t0 := time.Unix(1000, 0)
	r := &Round{Open: t0, Self: 1, Parts: make([]time.Time, 3)}
	pub := d.Due(r)[2]
	if got, want := d.ListDue(r), pub.Add(12*time.Second); !got.Equal(want) {
		t.Errorf("list due %v after the opening, want %v", got.Sub(t0), want.Sub(t0))
	}
	if got, want := d.ListGone(r), pub.Add(20*time.Second); !got.Equal(want) {
		t.Errorf("list given up %v after the opening, want %v", got.Sub(t0), want.Sub(t0))
	}
	if !d.ListDue(&Round{Self: 1, Parts: make([]time.Time, 3)}).IsZero() || !d.ListGone(&Round{Self: 1, Parts: make([]time.Time, 3)}).IsZero() {
		t.Error("a list due of a round not open")
	}
}
