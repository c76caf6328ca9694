package chargelog

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
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

// roundAbort is s's signed fault abort of round r of epoch number n (its
// epoch {n}), as evidence: each round is a slot of its own.
func roundAbort(t *testing.T, s signer, n uint64, r uint32) *wire.Charge {
	t.Helper()
	a := &wire.Abort{Epoch: [32]byte{byte(n)}, Number: n, Round: r, Kind: wire.AbortFault, Signer: []byte(s.id), Reason: []byte("no")}
	sig, err := proto.Sign(s.priv, proto.AbortDigest(a))
	if err != nil {
		t.Fatal(err)
	}
	a.Sig = sig
	return &wire.Charge{Kind: wire.EvAbort, Number: n, Item: a.Marshal()}
}

// TestSelfFloodKeepsOldCharge (§3 "The refusal budget", issue 25): a
// server charged at 7 and 9 (m = 3) that signs fault aborts of rounds
// 1..9 of 9, each a record of its own slot, stays out until 12: the
// prune keeps every record of a server's newest Keep numbers, so its own
// evidence never pushes out its charge of 7, and Keep records a signer's
// abort kind and epoch. Before, the prune kept its newest four records,
// all of 9: one count, out until 0. Every order of the same evidence
// leaves the same records, and a restart the same.
func TestSelfFloodKeepsOldCharge(t *testing.T) {
	ss := signers(t, 3)
	chain := []peer.ID{ss[0].id, ss[1].id, ss[2].id}
	bad := ss[1]
	evs := []*wire.Charge{roundAbort(t, bad, 7, 0)}
	for r := range uint32(10) {
		evs = append(evs, roundAbort(t, bad, 9, r))
	}
	// More numbers than Keep for the bound, with two rounds each.
	for n := uint64(20); n < 20+Keep+2; n++ {
		evs = append(evs, roundAbort(t, bad, n, 1), roundAbort(t, bad, n, 0))
	}
	logAll := func(l *Log, order []int) {
		for _, i := range order {
			n := evs[i].Number
			ctx := blame.Context{Epoch: [32]byte{byte(n)}, Chain: chain, Final: true}
			if _, err := l.LogCharge(evs[i], ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	var l Log
	l.Init(t.TempDir(), nil, nil)
	logAll(&l, []int{0, 1, 2, 3, 4, 5})
	if u, c := l.OutUntil(bad.id), l.RefusalCounts()[bad.id]; u != 12 || c != 2 {
		t.Fatalf("charged at 7 and 9 (m = 3), then rounds 1..4 of 9: %d counted, out until %d, want 2 and 12 (%d records)", c, u, len(l.Records(false)))
	}
	logAll(&l, []int{6, 7, 8, 9, 10})
	if u := l.OutUntil(bad.id); u != 12 {
		t.Errorf("and rounds 5..9 of 9: out until %d, want 12", u)
	}
	if recs := l.Records(false); len(recs) != 1+Keep {
		t.Errorf("%d records held, want %d (one of 7, %d of 9)", len(recs), 1+Keep, Keep)
	}
	// The bound: Keep numbers a server, one record each, the newest.
	dir := t.TempDir()
	var want []Record
	for try := range 4 {
		order := make([]int, len(evs))
		for i := range order {
			order[i] = i
		}
		switch try {
		case 1:
			slices.Reverse(order)
		case 2, 3:
			mrand.New(mrand.NewPCG(uint64(try), 0)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		var l Log
		d := t.TempDir()
		if try == 0 {
			d = dir
		}
		l.Init(d, nil, nil)
		logAll(&l, order)
		got := l.Records(false)
		if len(got) != 2*Keep {
			t.Errorf("order %d: %d records, want %d (two rounds of the newest %d numbers)", try, len(got), 2*Keep, Keep)
		}
		for _, r := range got {
			if r.Number < 20+2 {
				t.Errorf("order %d: number %d kept, older than the newest %d", try, r.Number, Keep)
			}
		}
		if try == 0 {
			want = got
			// Older than the newest Keep numbers: dropped at once, not new
			// (not relayed), the log as it was.
			old := roundAbort(t, bad, 3, 0)
			if grew, err := l.LogCharge(old, blame.Context{Epoch: [32]byte{3}, Chain: chain, Final: true}); grew || err != nil {
				t.Errorf("an abort of number 3 below the newest %d: new %v (%v), want false", Keep, grew, err)
			}
			if n := len(l.Records(false)); n != len(want) {
				t.Errorf("after an abort of number 3: %d records, want %d", n, len(want))
			}
		} else if !slices.EqualFunc(got, want, func(a, b Record) bool { return a.Key == b.Key && a.Peer == b.Peer }) {
			t.Errorf("order %d: records differ from the first order's", try)
		}
	}
	var again Log
	again.Init(dir, nil, nil)
	if got := again.Records(false); !slices.EqualFunc(got, want, func(a, b Record) bool { return a.Key == b.Key }) {
		t.Errorf("after a restart: %d records, not the %d saved", len(got), len(want))
	}
}
