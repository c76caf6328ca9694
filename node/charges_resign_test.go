package node

import (
	"crypto/sha256"
	"crypto/sha512"
	"slices"
	"strings"
	"testing"

	"filippo.io/edwards25519"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// chargeChain is a chain of m fresh keys for the charge rules' tests.
func chargeChain(t *testing.T, m int) ([]crypto.PrivKey, []peer.ID) {
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range m {
		priv, err := LoadIdentity(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		privs, chain = append(privs, priv), append(chain, id)
	}
	return privs, chain
}

// resign is a second valid Ed25519 signature of digest by priv, with a
// nonce of the signer's choosing instead of the derived one: what a
// corrupt signer can make as often as it likes.
func resign(t *testing.T, priv crypto.PrivKey, digest [32]byte, nonce byte) [64]byte {
	raw, err := priv.Raw() // seed ‖ public key
	if err != nil {
		t.Fatal(err)
	}
	h := sha512.Sum512(raw[:32])
	a, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		t.Fatal(err)
	}
	var wide [64]byte
	wide[0] = nonce
	r, _ := edwards25519.NewScalar().SetUniformBytes(wide[:])
	R := new(edwards25519.Point).ScalarBaseMult(r)
	kh := sha512.New()
	kh.Write(R.Bytes())
	kh.Write(raw[32:])
	kh.Write(digest[:])
	k, _ := edwards25519.NewScalar().SetUniformBytes(kh.Sum(nil))
	S := edwards25519.NewScalar().MultiplyAdd(k, a, r)
	var sig [64]byte
	copy(sig[:32], R.Bytes())
	copy(sig[32:], S.Bytes())
	return sig
}

// TestResignedVoidKeepsCharge (§3; an attacker's review): a void list
// that a majority backs against the last server, then the same list with
// a corrupt member's signature made afresh, handed on without
// attestations, in either order. Evidence is named by what was signed,
// so the copy is the same record and the attestations stay: the charge
// stays on the last server. Named by its bytes, the copy took the record's
// place whenever its name was the smaller and moved the charge to S_0.
func TestResignedVoidKeepsCharge(t *testing.T) {
	privs, chain := chargeChain(t, 4)
	epoch := [32]byte{5}
	ctx := blame.Context{Epoch: epoch, Chain: chain, Final: true}
	const num, round = 7, 3
	rl := wire.RoundList{Epoch: epoch, Round: round, Flags: wire.ListVoid}
	dg := proto.ListDigest(&rl)
	for _, p := range privs {
		sg, err := proto.Sign(p, dg)
		if err != nil {
			t.Fatal(err)
		}
		rl.Sigs = append(rl.Sigs, sg)
	}
	attest := func(by int) wire.Attest {
		a := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: num, Kind: wire.AbortNoPub, Round: round}, Lacking: 1 << 3, Signer: uint16(by)}
		a.Sig, _ = proto.Sign(privs[by], blame.AttestDigest(&a))
		return a
	}
	// Three copies, the original and two re-signed by S_2, sorted by the
	// name a charge is filed under: the middle one is backed, so a copy
	// sorts before it and one after, and each order of arrival is tried.
	// (A search for copies on each side of a fixed original never ends
	// when its name is among the smallest or largest of those tried.)
	named := func(item []byte) string {
		h := sha256.Sum256(append([]byte{wire.EvVoid}, item...))
		return string(h[:])
	}
	items := [][]byte{rl.Marshal()}
	for n := byte(1); n <= 2; n++ {
		c := rl
		c.Sigs = append([][64]byte(nil), rl.Sigs...)
		c.Sigs[2] = resign(t, privs[2], dg, n)
		if proto.VerifyPeerSig(chain[2], dg, c.Sigs[2]) != nil {
			t.Fatal("the fresh signature does not verify")
		}
		items = append(items, c.Marshal())
	}
	slices.SortFunc(items, func(a, b []byte) int { return strings.Compare(named(a), named(b)) })
	if named(items[0]) == named(items[1]) || named(items[1]) == named(items[2]) {
		t.Fatal("a re-signed copy is the original")
	}
	backed := &wire.Charge{Kind: wire.EvVoid, Number: num, Item: items[1], Attests: []wire.Attest{attest(0), attest(1), attest(2)}}
	before := &wire.Charge{Kind: wire.EvVoid, Number: num, Item: items[0]}
	after := &wire.Charge{Kind: wire.EvVoid, Number: num, Item: items[2]}
	for _, order := range [][]*wire.Charge{{backed, before}, {before, backed}, {backed, after}} {
		s := &Server{cfg: ServerConfig{DataDir: t.TempDir()}, log: quietLogger()}
		s.ref.Init(s.cfg.DataDir, s.log, nil)
		for _, ev := range order {
			if _, err := s.ref.LogCharge(ev, ctx); err != nil {
				t.Fatal(err)
			}
		}
		c := s.ref.RefusalCounts()
		if c[chain[3]] != 1 || c[chain[0]] != 0 {
			t.Errorf("charges %v: want the last server once, S_0 never", c)
		}
	}
	// The replay of a log holding both copies charges the same.
	got := blame.ReplayCharges([][]byte{backed.Marshal(), before.Marshal()}, func(uint64) (blame.Context, bool) { return ctx, true })
	if len(got[chain[3]]) != 1 || len(got[chain[0]]) != 0 {
		t.Errorf("replay charges %v: want the last server once, S_0 never", got)
	}
}

// TestBlameVoidChargesNobody (§3, §5.2 v3; an attacker's review): the
// void of a blamed round names a culprit, so its list, signed by the whole
// chain and flagged ListBlame, is evidence against nobody, however it
// comes (a corrupt server hands it on after the epoch is gone). Unflagged,
// it charged S_0 for an absence nobody attested.
func TestBlameVoidChargesNobody(t *testing.T) {
	privs, chain := chargeChain(t, 3)
	epoch := [32]byte{6}
	ctx := blame.Context{Epoch: epoch, Chain: chain, Final: true}
	rl := wire.RoundList{Epoch: epoch, Round: 2, Flags: wire.ListVoid | wire.ListBlame}
	dg := proto.ListDigest(&rl)
	for _, p := range privs {
		sg, _ := proto.Sign(p, dg)
		rl.Sigs = append(rl.Sigs, sg)
	}
	ev := &wire.Charge{Kind: wire.EvVoid, Number: 4, Item: rl.Marshal()}
	if p, _, err := blame.ChargeOf(ev, ctx); err == nil || p != "" {
		t.Fatalf("a blamed round's void charged %v (%v)", p, err)
	}
	s := &Server{cfg: ServerConfig{DataDir: t.TempDir()}, log: quietLogger()}
	s.ref.Init(s.cfg.DataDir, s.log, nil)
	_, _ = s.ref.LogCharge(ev, ctx)
	if c := s.ref.RefusalCounts(); len(c) != 0 {
		t.Fatalf("a blamed round's void counted: %v", c)
	}
	// The flag alone, without ListVoid, does not decode.
	rl.Flags = wire.ListBlame
	var back wire.RoundList
	if err := back.Unmarshal(rl.Marshal(), proto.GenericLimits()); err == nil {
		t.Fatal("a list flagged blamed but not void decoded")
	}
}
