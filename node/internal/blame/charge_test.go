package blame

import (
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestChargeOfAttacks: ChargeOf, the charge of a piece of evidence, as
// an attacker would try it (docs/protocol.md §3, "Attacks on the
// attestations"), over a chain of four with S_1 absent from round 5.
func TestChargeOfAttacks(t *testing.T) {
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
	const num, round = 9, 5
	abort := func(signer int) []byte {
		a := &wire.Abort{Epoch: epoch, Number: num, Round: round, Kind: wire.AbortNoPub, Signer: []byte(chain[signer]), Reason: []byte("no publication")}
		a.Sig, _ = proto.Sign(privs[signer], proto.AbortDigest(a))
		return a.Marshal()
	}
	attest := func(by int, lacking uint64) wire.Attest {
		a := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: num, Kind: wire.AbortNoPub, Round: round}, Lacking: lacking, Signer: uint16(by)}
		a.Sig, _ = proto.Sign(privs[by], AttestDigest(&a))
		return a
	}
	s1 := uint64(1 << 1)
	for _, c := range []struct {
		name    string
		attests []wire.Attest
		want    peer.ID
	}{
		{"two of the three others lack S_1", []wire.Attest{attest(0, s1), attest(2, s1|1<<3), attest(3, 1<<2)}, chain[1]},
		{"S_1 and the signer yet to answer: nobody yet", []wire.Attest{attest(0, s1), attest(2, s1|1<<3)}, ""},
		{"an answer of no absence changes nothing", []wire.Attest{attest(0, s1), attest(2, s1), attest(3, 0)}, chain[1]},
		{"one corrupt attester alone frames nobody", []wire.Attest{attest(3, 1<<0), attest(1, 0), attest(2, 0)}, chain[3]},
		{"one corrupt attester before the others: nobody yet", []wire.Attest{attest(3, 1<<0)}, ""},
		{"S_1's own attestation does not count", []wire.Attest{attest(1, s1), attest(0, s1), attest(2, 0), attest(3, 0)}, chain[3]},
		{"attestations stripped: nobody yet", nil, ""},
		{"a repeated attestation counts once", []wire.Attest{attest(0, s1), attest(0, s1), attest(2, 0), attest(3, 0)}, chain[3]},
		{"an attester's second answer, pivotal, charges it", []wire.Attest{attest(0, s1), attest(2, 0), attest(2, s1), attest(3, 0)}, chain[2]},
		{"an attester's second answer, not pivotal, changes nothing", []wire.Attest{attest(0, s1), attest(2, s1), attest(2, s1|1<<3), attest(3, 0)}, chain[1]},
		{"the first backed position, not a later one", []wire.Attest{attest(0, s1|1<<3), attest(2, s1|1<<3), attest(1, 1<<3)}, chain[1]},
	} {
		got, _, err := ChargeOf(&wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(3), Attests: c.attests}, ctx)
		if err != nil || got != c.want {
			t.Errorf("%s: charged %v (%v), want %v", c.name, got, err, c.want)
		}
	}
	// A forged attestation (S_2's position, S_0's key) refuses the whole.
	forged := attest(0, s1)
	forged.Signer = 2
	if _, _, err := ChargeOf(&wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(3), Attests: []wire.Attest{attest(0, s1), forged}}, ctx); err == nil {
		t.Error("a forged attestation was taken")
	}
	// An attestation of another round does not back this claim.
	other := attest(0, s1)
	other.Round = round + 1
	other.Sig, _ = proto.Sign(privs[0], AttestDigest(&other))
	if _, _, err := ChargeOf(&wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(3), Attests: []wire.Attest{other}}, ctx); err == nil {
		t.Error("an attestation of another round was taken")
	}
	// The same evidence merged in any order charges the same.
	a, b := &wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(3)}, &wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(3)}
	MergeAttests(a, []wire.Attest{attest(0, s1)})
	MergeAttests(a, []wire.Attest{attest(3, 1<<2), attest(2, s1), attest(0, s1)})
	MergeAttests(b, []wire.Attest{attest(2, s1), attest(0, s1), attest(3, 1<<2)})
	pa, _, _ := ChargeOf(a, ctx)
	pb, _, _ := ChargeOf(b, ctx)
	if pa != chain[1] || pb != chain[1] || string(a.Marshal()) != string(b.Marshal()) {
		t.Errorf("merge order changed the evidence or its charge: %v, %v", pa, pb)
	}
	// An equivocator's answers: one kept only if it changes the parts
	// all of those kept lack or the parts any does, so that both words
	// are the same whichever order they came in: here none and {1, 3};
	// with S_3's, S_1 is backed on the one and not on the other: the
	// second is pivotal, and the equivocator S_2 is charged.
	for _, order := range [][]wire.Attest{
		{attest(0, s1), attest(2, s1), attest(2, 0), attest(2, 1<<3), attest(3, 0)},
		{attest(2, 1<<3), attest(2, 0), attest(0, s1), attest(3, 0), attest(2, s1)},
	} {
		c := &wire.Charge{Kind: wire.EvAbort, Number: num, Item: abort(3)}
		MergeAttests(c, order)
		if n := len(c.Attests); n != 5 {
			t.Errorf("%d attestations kept, want 5 (three of the equivocator)", n)
		}
		if p, _, _ := ChargeOf(c, ctx); p != chain[2] {
			t.Errorf("a pivotal equivocator: %v charged, want S_2", p)
		}
	}
}

func newKey() (crypto.PrivKey, error) {
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	return priv, err
}

// TestVoidChargesUnbackedClaimant: a void signed by the whole chain of
// four, round 5, proposed by S_0 on S_2's signed lack claim of its input
// (wire.ClaimLack). No part backed: the claimant pays, not the proposer;
// a part backed: that part's server, as before; no claim: S_0. A claim of
// a part other than its signer's input, or forged, refuses the evidence.
func TestVoidChargesUnbackedClaimant(t *testing.T) {
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
	const num, round = 9, 5
	rl := &wire.RoundList{Epoch: epoch, Round: round, Flags: wire.ListVoid, Entries: []wire.ListEntry{}, Published: [][32]byte{}, Manifests: [][32]byte{}}
	dg := proto.ListDigest(rl)
	for _, p := range privs {
		sig, _ := proto.Sign(p, dg)
		rl.Sigs = append(rl.Sigs, sig)
	}
	item := rl.Marshal()
	sign := func(by int, kind uint8, lacking uint64) wire.Attest {
		a := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: num, Kind: kind, Round: round}, Lacking: lacking, Signer: uint16(by)}
		a.Sig, _ = proto.Sign(privs[by], AttestDigest(&a))
		return a
	}
	claim := sign(2, wire.ClaimLack, 1<<1)
	for _, c := range []struct {
		name    string
		attests []wire.Attest
		want    peer.ID
	}{
		{"split: S_0 lacks S_2's part, S_3 S_1's", []wire.Attest{claim, sign(0, wire.AbortNoPub, 1<<2), sign(1, wire.AbortNoPub, 0), sign(2, wire.AbortNoPub, 0), sign(3, wire.AbortNoPub, 1<<1)}, chain[2]},
		{"no claim: the proposer", []wire.Attest{sign(0, wire.AbortNoPub, 1<<2), sign(1, wire.AbortNoPub, 0), sign(2, wire.AbortNoPub, 0), sign(3, wire.AbortNoPub, 1<<1)}, chain[0]},
		{"the signer backed: the signer", []wire.Attest{claim, sign(2, wire.AbortNoPub, 1<<1), sign(0, wire.AbortNoPub, 1<<1), sign(3, wire.AbortNoPub, 1<<1)}, chain[1]},
		{"the claim is no attestation of its own", []wire.Attest{claim, sign(0, wire.AbortNoPub, 1<<1), sign(1, wire.AbortNoPub, 0), sign(3, wire.AbortNoPub, 1<<1)}, chain[1]},
		// A verdict that an attestation still to come could move
		// charges nobody yet: the split's, S_1's and S_2's not in.
		{"split, two attestations missing: nobody yet", []wire.Attest{claim, sign(0, wire.AbortNoPub, 1<<2), sign(3, wire.AbortNoPub, 1<<1)}, ""},
		{"the proposer's attestation alone: nobody yet", []wire.Attest{claim, sign(0, wire.AbortNoPub, 1<<2)}, ""},
		{"claim and attestation of one signer are no equivocation", []wire.Attest{claim, sign(2, wire.AbortNoPub, 1<<1), sign(3, wire.AbortNoPub, 1<<1)}, chain[1]},
	} {
		ev := &wire.Charge{Kind: wire.EvVoid, Number: num, Item: item}
		MergeAttests(ev, c.attests)
		got, why, err := ChargeOf(ev, ctx)
		if err != nil || got != c.want {
			t.Errorf("%s: charged %v (%q, %v), want %v", c.name, got, why, err, c.want)
		}
	}
	for name, bad := range map[string]wire.Attest{
		"a claim of another part": sign(2, wire.ClaimLack, 1<<0),
		"a claim by S_0":          sign(0, wire.ClaimLack, 1),
	} {
		if _, _, err := ChargeOf(&wire.Charge{Kind: wire.EvVoid, Number: num, Item: item, Attests: []wire.Attest{bad}}, ctx); err == nil {
			t.Errorf("%s was taken", name)
		}
	}
	forged := sign(3, wire.ClaimLack, 1<<1)
	forged.Signer = 2
	if _, _, err := ChargeOf(&wire.Charge{Kind: wire.EvVoid, Number: num, Item: item, Attests: []wire.Attest{forged}}, ctx); err == nil {
		t.Error("a forged claim was taken")
	}
	// An abort's evidence takes no claim: its signer is the claimant.
	a := &wire.Abort{Epoch: epoch, Number: num, Round: round, Kind: wire.AbortNoPub, Signer: []byte(chain[0]), Reason: []byte("no publication")}
	a.Sig, _ = proto.Sign(privs[0], proto.AbortDigest(a))
	if _, _, err := ChargeOf(&wire.Charge{Kind: wire.EvAbort, Number: num, Item: a.Marshal(), Attests: []wire.Attest{claim}}, ctx); err == nil {
		t.Error("a lack claim was taken in an abort's evidence")
	}
}

// TestUnfilledChargesNobody: S_0's abort of a round it could not fill
// (wire.AbortUnfilled) charges no server; the same kind signed by another
// chain server, which fills no round, charges its signer.
func TestUnfilledChargesNobody(t *testing.T) {
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range 3 {
		priv, err := newKey()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		privs, chain = append(privs, priv), append(chain, id)
	}
	ctx := Context{Epoch: [32]byte{7}, Chain: chain, Final: true}
	for signer, want := range map[int]peer.ID{0: "", 1: chain[1], 2: chain[2]} {
		a := &wire.Abort{Epoch: ctx.Epoch, Number: 9, Kind: wire.AbortUnfilled, Signer: []byte(chain[signer]), Reason: []byte("round 0 not filled")}
		a.Sig, _ = proto.Sign(privs[signer], proto.AbortDigest(a))
		got, why, err := ChargeOf(&wire.Charge{Kind: wire.EvAbort, Number: 9, Item: a.Marshal()}, ctx)
		if err != nil || got != want {
			t.Errorf("signed by S_%d: charged %v (%q, %v), want %v", signer, got, why, err, want)
		}
	}
}

// TestDownChargesBackedServer: an abort saying S_2 was down (wire.AbortDown,
// Round 2) over a chain of four, signed by S_0, charges S_2 when more than
// half of the others (two of S_0, S_1, S_3) attest it down, and is then a
// public cause of its epoch; else it charges its signer. The down server's
// own word and a signer naming itself count for nothing.
func TestDownChargesBackedServer(t *testing.T) {
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
	ctx := Context{Epoch: [32]byte{7}, Chain: chain, Final: true}
	abort := func(signer int, down uint32) []byte {
		a := &wire.Abort{Epoch: ctx.Epoch, Number: 9, Round: down, Kind: wire.AbortDown, Signer: []byte(chain[signer]), Reason: []byte("server left")}
		a.Sig, _ = proto.Sign(privs[signer], proto.AbortDigest(a))
		return a.Marshal()
	}
	attest := func(by int, down uint32) wire.Attest {
		a := wire.Attest{AttestReq: wire.AttestReq{Epoch: ctx.Epoch, Number: 9, Kind: wire.AbortDown, Round: down}, Lacking: 1 << down, Signer: uint16(by)}
		a.Sig, _ = proto.Sign(privs[by], AttestDigest(&a))
		return a
	}
	for _, c := range []struct {
		name    string
		signer  int
		down    uint32
		attests []wire.Attest
		want    peer.ID
		cause   bool
	}{
		{"two of three attest", 0, 2, []wire.Attest{attest(0, 2), attest(1, 2)}, chain[2], true},
		{"all three attest", 0, 2, []wire.Attest{attest(0, 2), attest(1, 2), attest(3, 2)}, chain[2], true},
		{"its signer alone", 0, 2, []wire.Attest{attest(0, 2)}, chain[0], false},
		{"the down server's own word", 0, 2, []wire.Attest{attest(0, 2), attest(2, 2)}, chain[0], false},
		{"no attestation", 0, 2, nil, chain[0], false},
		{"its signer down", 1, 1, []wire.Attest{attest(0, 1), attest(3, 1)}, chain[1], false},
	} {
		ev := &wire.Charge{Kind: wire.EvAbort, Number: 9, Item: abort(c.signer, c.down), Attests: c.attests}
		got, why, err := ChargeOf(ev, ctx)
		if err != nil || got != c.want || PublicCause(ev, got) != c.cause {
			t.Errorf("%s: charged %v (%q, %v), cause %v; want %v, cause %v", c.name, got, why, err, PublicCause(ev, got), c.want, c.cause)
		}
	}
}
