package roundblame

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/store"
)

// signedRoot is server s's signed root of its output of round r.
func (f *epoch) signedRoot(t *testing.T, s int, r uint32, root [32]byte) wire.Root {
	t.Helper()
	sig, err := proto.Sign(f.privs[s], roundstep.BatchDigest(&wire.Batch{Epoch: f.v.ID, Round: r, S: uint16(s + 1), Root: root}))
	if err != nil {
		t.Fatal(err)
	}
	return wire.Root{Epoch: f.v.ID, Round: r, S: uint16(s + 1), Root: root, Sig: sig}
}

// TestCheckEquivocation: two different roots server 1 signed for one
// batch name it; one root twice, or a root another server signed, is
// not evidence.
func TestCheckEquivocation(t *testing.T) {
	t.Parallel()
	f := newEpoch(t, 3, 2)
	a := f.signedRoot(t, 1, 1, [32]byte{1})
	b := f.signedRoot(t, 1, 1, [32]byte{2})
	if s, err := CheckEquivocation(f.v, &wire.Equivocation{A: a, B: b}); err != nil || s != 1 {
		t.Fatalf("two roots of server 1: %d, %v", s, err)
	}
	if _, err := CheckEquivocation(f.v, &wire.Equivocation{A: a, B: a}); err == nil {
		t.Fatal("one root twice is an equivocation")
	}
	c := f.signedRoot(t, 0, 1, [32]byte{2})
	c.S = b.S
	if _, err := CheckEquivocation(f.v, &wire.Equivocation{A: a, B: c}); err == nil {
		t.Fatal("a root signed by another server names server 1")
	}
	later := f.signedRoot(t, 1, 0, [32]byte{2})
	if _, err := CheckEquivocation(f.v, &wire.Equivocation{A: a, B: later}); err == nil {
		t.Fatal("roots of two rounds are an equivocation")
	}
}

// TestCheckDoubleSubmit: two different onions its client signed for one
// slot and round are evidence; the same onion twice, or one signed by
// another slot's client, are not.
func TestCheckDoubleSubmit(t *testing.T) {
	t.Parallel()
	f := newEpoch(t, 2, 2)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	copy(f.v.Desc.Clients[1].RegKey[:], pub)
	eid := mix.EpochID(f.v.ID)
	sign := func(k ed25519.PrivateKey, onion []byte) ([32]byte, [64]byte) {
		var sig [64]byte
		copy(sig[:], mix.SignSubmission(k, eid, 1, 1, onion))
		return mix.SubmissionDigest(onion), sig
	}
	d := wire.DoubleSubmit{Epoch: f.v.ID, Round: 1, Slot: 1}
	d.HashA, d.SigA = sign(key, []byte("onion a"))
	d.HashB, d.SigB = sign(key, []byte("onion b"))
	if err := CheckDoubleSubmit(f.v, &d); err != nil {
		t.Fatalf("two onions of one slot: %v", err)
	}
	same := d
	same.HashB, same.SigB = d.HashA, d.SigA
	if err := CheckDoubleSubmit(f.v, &same); err == nil {
		t.Fatal("one onion twice is a double submission")
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	forged := d
	forged.HashB, forged.SigB = sign(other, []byte("onion b"))
	if err := CheckDoubleSubmit(f.v, &forged); err == nil {
		t.Fatal("an onion another key signed names the slot's client")
	}
	out := d
	out.Slot = 2
	if err := CheckDoubleSubmit(f.v, &out); err == nil {
		t.Fatal("a slot out of the epoch")
	}
}

// TestCheckBadBatch: a signed batch with an entry of the wrong size
// names its signer; a well-formed one, or entries that do not match the
// signed root, do not.
func TestCheckBadBatch(t *testing.T) {
	t.Parallel()
	const m, n = 3, 3
	f := newEpoch(t, m, n)
	f.v.Desc.Params.MaxClients, f.v.Desc.Params.MaxRows = 16, 16
	lim := proto.LimitsFor(f.v.Desc.Params, m)
	lim.Frame = 1 << 20
	batch := func(entries [][]byte, root [32]byte) (wire.BatchHead, []byte) {
		r := f.signedRoot(t, 1, 1, root)
		b := wire.Batch{Epoch: f.v.ID, Round: 1, S: 2, Entries: entries, Root: root, Sig: r.Sig}
		body := b.Marshal()
		h, err := wire.PeekBatch(body)
		if err != nil {
			t.Fatal(err)
		}
		return h, body
	}
	good := f.inputs[2]
	h, body := batch(good, proto.MerkleRoot(good))
	if _, err := CheckBadBatch(f.v, h, body, lim); err == nil || !strings.Contains(err.Error(), "well formed") {
		t.Fatalf("a well-formed batch: %v", err)
	}
	short := append([][]byte{good[0][:len(good[0])-1]}, good[1:]...)
	h, body = batch(short, proto.MerkleRoot(short))
	if r, err := CheckBadBatch(f.v, h, body, lim); err != nil || r != 1 {
		t.Fatalf("an entry of the wrong size: round %d, %v", r, err)
	}
	h, body = batch(short, proto.MerkleRoot(good))
	if _, err := CheckBadBatch(f.v, h, body, lim); err == nil {
		t.Fatal("entries off the signed root name its signer")
	}
	h, body = batch(short[1:], proto.MerkleRoot(short[1:]))
	if r, err := CheckBadBatch(f.v, h, body, lim); err != nil || r != 1 {
		t.Fatalf("a missing entry: round %d, %v", r, err)
	}
}

// memRecords is a Recorder in memory.
type memRecords []store.BlameRecord

func (m *memRecords) PutBlame(r store.BlameRecord) error { *m = append(*m, r); return nil }
func (m *memRecords) Blames() ([]store.BlameRecord, error) {
	return *m, nil
}

// TestExcludedLoadsRecords: the culprit servers of stored records are
// excluded from the first ask on (a restart keeps them out), a culprit
// client's record excludes no server, and a named server is excluded.
func TestExcludedLoadsRecords(t *testing.T) {
	t.Parallel()
	f := newEpoch(t, 3, 1)
	a, b, c := f.v.Chain[0], f.v.Chain[1], f.v.Chain[2]
	recs := &memRecords{{Role: "server", PeerID: a.String()}, {Role: "client", PeerID: b.String()}}
	x := &Excluded{St: recs}
	if !x.Has(a) || x.Has(b) || x.Has(c) {
		t.Fatalf("excluded %v %v %v, want only the recorded server", x.Has(a), x.Has(b), x.Has(c))
	}
	x.Add(c)
	if !x.Has(c) {
		t.Fatal("a named server is not excluded")
	}
	if got, _ := x.Records(); len(got) != 2 {
		t.Fatalf("%d records", len(got))
	}
	var none Excluded
	if none.Has(peer.ID("x")) {
		t.Fatal("a server without a store excludes")
	}
}
