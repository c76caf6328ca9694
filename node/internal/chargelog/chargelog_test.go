package chargelog

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// signer is a server's key and id.
type signer struct {
	priv crypto.PrivKey
	id   peer.ID
}

func signers(t *testing.T, n int) []signer {
	t.Helper()
	out := make([]signer, n)
	for i := range out {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		out[i] = signer{priv, id}
	}
	return out
}

// faultAbort is s's signed fault abort of epoch number n, as evidence.
func faultAbort(t *testing.T, s signer, epoch [32]byte, n uint64, reason string) *wire.Charge {
	t.Helper()
	a := &wire.Abort{Epoch: epoch, Number: n, Kind: wire.AbortFault, Signer: []byte(s.id), Reason: []byte(reason)}
	sig, err := proto.Sign(s.priv, proto.AbortDigest(a))
	if err != nil {
		t.Fatal(err)
	}
	a.Sig = sig
	return &wire.Charge{Kind: wire.EvAbort, Number: n, Item: a.Marshal()}
}

// TestRefusalBudget (§3 "The refusal budget"): two fault aborts of one
// server less than m numbers apart leave it out of the m chains after the
// second, m apart they do not, and the counts survive a restart.
func TestRefusalBudget(t *testing.T) {
	ss := signers(t, 3)
	chain := []peer.ID{ss[0].id, ss[1].id, ss[2].id}
	bad := ss[1]
	dir := t.TempDir()
	var l Log
	l.Init(dir, nil, nil)
	for _, n := range []uint64{7, 9} {
		epoch := [32]byte{byte(n)}
		ctx := blame.Context{Epoch: epoch, Chain: chain, Final: true}
		if _, err := l.LogCharge(faultAbort(t, bad, epoch, n, "no"), ctx); err != nil {
			t.Fatal(err)
		}
	}
	if u := l.OutUntil(bad.id); u != 9+3 {
		t.Fatalf("aborts at 7 and 9 of a chain of 3: out until %d, want 12", u)
	}
	var again Log
	again.Init(dir, nil, nil)
	if c := again.RefusalCounts(); c[bad.id] != 2 || len(c) != 1 {
		t.Fatalf("after a restart: counts %v, want 2 of %s", c, bad.id.ShortString())
	}
	if u := again.OutUntil(bad.id); u != 12 {
		t.Fatalf("after a restart: out until %d, want 12", u)
	}
	var within Log
	within.Add(Record{Peer: bad.id.String(), Number: 7, Window: 3}, Record{Peer: bad.id.String(), Number: 10, Window: 3})
	if u := within.OutUntil(bad.id); u != 0 {
		t.Fatalf("aborts 3 numbers apart with m = 3: out until %d", u)
	}
	// One epoch charges once, however many records name it.
	var once Log
	once.Add(Record{Peer: bad.id.String(), Number: 7, Window: 3, Epoch: "aa"}, Record{Peer: bad.id.String(), Number: 7, Window: 3, Epoch: "aa"})
	if u, c := once.OutUntil(bad.id), once.RefusalCounts()[bad.id]; u != 0 || c != 1 {
		t.Fatalf("two records of one epoch: out until %d, counted %d; want 0, 1", u, c)
	}
	// A waived record does not count.
	var waived Log
	waived.Add(Record{Peer: bad.id.String(), Number: 7, Window: 3, Waived: true}, Record{Peer: bad.id.String(), Number: 8, Window: 3})
	if u := waived.OutUntil(bad.id); u != 0 {
		t.Fatalf("a waived abort counts: out until %d", u)
	}
}

// TestOneRecordASlot: a signer's many aborts of one epoch (one slot) keep
// one record, the smallest key's, whatever the order they come in, so
// that every server holds the same and a flood evicts nothing.
func TestOneRecordASlot(t *testing.T) {
	ss := signers(t, 3)
	chain := []peer.ID{ss[0].id, ss[1].id, ss[2].id}
	epoch := [32]byte{4}
	ctx := blame.Context{Epoch: epoch, Chain: chain, Final: true}
	var evs []*wire.Charge
	for i := range 5 {
		evs = append(evs, faultAbort(t, ss[2], epoch, 4, fmt.Sprint("reason ", i)))
	}
	least := ""
	for _, ev := range evs {
		if k := blame.ChargeKey(ev); least == "" || k < least {
			least = k
		}
	}
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}} {
		var l Log
		l.Init(t.TempDir(), nil, nil)
		for _, i := range order {
			if _, err := l.LogCharge(evs[i], ctx); err != nil {
				t.Fatal(err)
			}
		}
		recs := l.Records(false)
		if len(recs) != 1 || recs[0].Key != least || recs[0].Peer != ss[2].id.String() {
			t.Fatalf("order %v: %d records (%+v), want one, the smallest key's, charging its signer", order, len(recs), recs)
		}
	}
}

// TestRejudgeFollowsCertificate: a charge judged in one epoch's context is
// recomputed when the number's certificate names another epoch (it then
// charges nobody), and LogCharge judges in the certificate held when it
// writes, not the context it was given.
func TestRejudgeFollowsCertificate(t *testing.T) {
	ss := signers(t, 3)
	slices.SortFunc(ss, func(a, b signer) int { return strings.Compare(string(a.id), string(b.id)) })
	chain := []peer.ID{ss[0].id, ss[1].id, ss[2].id}
	epoch := [32]byte{5}
	ctx := blame.Context{Epoch: epoch, Chain: chain, Final: true}
	ev := faultAbort(t, ss[0], epoch, 5, "no")
	var l Log
	l.Init(t.TempDir(), nil, nil)
	if _, err := l.LogCharge(ev, ctx); err != nil {
		t.Fatal(err)
	}
	if c := l.RefusalCounts()[ss[0].id]; c != 1 {
		t.Fatalf("counted %d, want 1", c)
	}
	other := blame.Context{Epoch: [32]byte{6}, Chain: chain, Final: true}
	l.Rejudge(5, other)
	if c := l.RefusalCounts(); len(c) != 0 {
		t.Fatalf("after the number's certificate named another epoch: counts %v, want none", c)
	}
	// Held certificate: a final one of another epoch over the chain.
	ids := proto.ChainIDs(chain)
	cert := &wire.Cert{Kind: wire.CertFinal, Number: 5, Epoch: [32]byte{6}, Chain: ids}
	for i := range ids {
		cert.Sigs = append(cert.Sigs, wire.CertSig{Index: uint16(i)})
	}
	if _, err := blame.CertContext(cert); err != nil {
		t.Fatal(err)
	}
	var held Log
	held.Init(t.TempDir(), nil, func(n uint64) (*wire.Cert, bool) { return cert, n == 5 })
	_, _ = held.LogCharge(ev, ctx)
	if c := held.RefusalCounts(); len(c) != 0 {
		t.Fatalf("judged in a stale context: counts %v, want none", c)
	}
}

// TestFirstSight: each signer's abort of an epoch is handled once; the
// memory reaches SeenKeep numbers back and is pruned past that.
func TestFirstSight(t *testing.T) {
	ss := signers(t, 2)
	var l Log
	if !l.FirstSight([32]byte{1}, 1, ss[0].id) || l.FirstSight([32]byte{1}, 1, ss[0].id) {
		t.Fatal("an abort is new once")
	}
	if l.AbortedByOther([32]byte{1}, ss[0].id) || !l.AbortedByOther([32]byte{1}, ss[1].id) {
		t.Fatal("AbortedByOther")
	}
	l.FirstSight([32]byte{2}, 2+SeenKeep, ss[1].id)
	if !l.FirstSight([32]byte{1}, 1, ss[0].id) {
		t.Fatal("an abort more than SeenKeep numbers back is not forgotten")
	}
}
