package blame

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// A chain of five for the round-5 evidence of number 9: a void list
// signed by all five and an abort for the missing publication signed by
// S_0; sign(by, lacking) is by's attestation of the round.
type five struct {
	ctx         Context
	chain       []peer.ID
	privs       []crypto.PrivKey
	void, abort []byte
	sign        func(by int, lacking uint64) wire.Attest
}

// abortBy is a signed by chain position by.
func (f five) abortBy(t *testing.T, by int, a *wire.Abort) []byte {
	t.Helper()
	var err error
	if a.Sig, err = proto.Sign(f.privs[by], proto.AbortDigest(a)); err != nil {
		t.Fatal(err)
	}
	return a.Marshal()
}

func newFive(t *testing.T) five {
	t.Helper()
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range 5 {
		priv, err := newKey()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		privs, chain = append(privs, priv), append(chain, id)
	}
	epoch := [32]byte{7}
	const num, round = 9, 5
	rl := &wire.RoundList{Epoch: epoch, Round: round, Flags: wire.ListVoid, Entries: []wire.ListEntry{}, Published: [][32]byte{}, Manifests: [][32]byte{}}
	dg := proto.ListDigest(rl)
	for _, p := range privs {
		sig, _ := proto.Sign(p, dg)
		rl.Sigs = append(rl.Sigs, sig)
	}
	a := &wire.Abort{Epoch: epoch, Number: num, Round: round, Kind: wire.AbortNoPub, Signer: []byte(chain[0]), Reason: []byte("no publication")}
	a.Sig, _ = proto.Sign(privs[0], proto.AbortDigest(a))
	signed := map[[2]uint64]wire.Attest{}
	return five{
		ctx: Context{Epoch: epoch, Chain: chain, Final: true}, chain: chain, privs: privs, void: rl.Marshal(), abort: a.Marshal(),
		sign: func(by int, lacking uint64) wire.Attest {
			k := [2]uint64{uint64(by), lacking}
			if x, ok := signed[k]; ok {
				return x
			}
			x := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: num, Kind: wire.AbortNoPub, Round: round}, Lacking: lacking, Signer: uint16(by)}
			x.Sig, _ = proto.Sign(privs[by], AttestDigest(&x))
			signed[k] = x
			return x
		},
	}
}

func (f five) judge(t *testing.T, kind uint8, as ...wire.Attest) peer.ID {
	t.Helper()
	item := f.void
	if kind == wire.EvAbort {
		item = f.abort
	}
	ev := &wire.Charge{Kind: kind, Number: 9, Item: item}
	MergeAttests(ev, as)
	p, _, err := ChargeOf(ev, f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCorruptPairNeverFramesHonest: S_1 and S_2 of five corrupt, S_2
// passing nothing on (every honest server lacks parts 2 to 4). For every
// answer of the pair (none, any lacking bits, or two different ones),
// every set of the honest attestations that came, views agreeing or S_1's
// root late at S_3 and S_4, the void and the abort charge S_1, S_2 or
// nobody yet, never S_0 (the claimant), S_3 or S_4; and a verdict given
// is final: no attestation of the set, taken away, gives another charge
// (an equivocator's second too: TestEquivocationMovesNoCharge).
// Before, an abort on S_0's attestation alone charged S_0 and a silent
// pair left the void uncharged whatever the honest attestations said.
func TestCorruptPairNeverFramesHonest(t *testing.T) {
	f := newFive(t)
	const rest = 1<<2 | 1<<3 | 1<<4
	views := map[string][3]uint64{
		"agreeing":         {rest, 1<<4 | 1<<2, 1<<3 | 1<<2},
		"S_1 late at S_3+": {rest, 1<<1 | 1<<4 | 1<<2, 1<<1 | 1<<3 | 1<<2},
	}
	// answers of one corrupt server: none, one of a few bit sets, or two.
	answers := func(by int) [][]wire.Attest {
		out := [][]wire.Attest{nil}
		for _, b := range []uint64{0, 1 << 0, 1 << 1, 1 << 2, 1<<0 | 1<<1 | 1<<3, rest, 1<<3 | 1<<4} {
			out = append(out, []wire.Attest{f.sign(by, b)})
		}
		return append(out, []wire.Attest{f.sign(by, 0), f.sign(by, 1<<0)})
	}
	honest := map[peer.ID]bool{f.chain[0]: true, f.chain[3]: true, f.chain[4]: true}
	for name, v := range views {
		h := []wire.Attest{f.sign(0, v[0]), f.sign(3, v[1]), f.sign(4, v[2])}
		gotPair := 0
		for _, a1 := range answers(1) {
			for _, a2 := range answers(2) {
				for mask := 1; mask < 8; mask++ { // S_0's own is always in
					if mask&1 == 0 {
						continue
					}
					var set []wire.Attest
					for i := range h {
						if mask&(1<<i) != 0 {
							set = append(set, h[i])
						}
					}
					set = append(append(set, a1...), a2...)
					for _, kind := range []uint8{wire.EvVoid, wire.EvAbort} {
						p := f.judge(t, kind, set...)
						if honest[p] {
							t.Fatalf("%s, kind %d, set %v: honest %s charged", name, kind, lacks(set), p.ShortString())
						}
						if p != "" && mask == 7 {
							gotPair++
						}
						if p == "" {
							continue
						}
						for drop := range set {
							sub := append(append([]wire.Attest{}, set[:drop]...), set[drop+1:]...)
							if q := f.judge(t, kind, sub...); q != "" && q != p {
								t.Fatalf("%s, kind %d: %v charges %s, without %v %s: a verdict moved", name, kind, lacks(set), p.ShortString(), lacks(set[drop:drop+1]), q.ShortString())
							}
						}
					}
				}
			}
		}
		if gotPair == 0 {
			t.Errorf("%s: the pair never charged with every honest attestation in", name)
		}
	}
	// The views agreeing and the pair silent: S_2 (its part backed by
	// the three honest servers; part 1 cannot be backed any more).
	ag := views["agreeing"]
	for _, kind := range []uint8{wire.EvVoid, wire.EvAbort} {
		if p := f.judge(t, kind, f.sign(0, ag[0]), f.sign(3, ag[1]), f.sign(4, ag[2])); p != f.chain[2] {
			t.Errorf("kind %d, silent pair, views agreeing: charged %q, want S_2", kind, p.ShortString())
		}
	}
}

func lacks(as []wire.Attest) []string {
	var out []string
	for _, a := range as {
		out = append(out, string(rune('0'+a.Signer))+":"+bits(a.Lacking))
	}
	return out
}

func bits(b uint64) string {
	s := ""
	for j := range 5 {
		if b&(1<<j) != 0 {
			s += string(rune('0' + j))
		}
	}
	return s
}

// TestAbortNoPubChargeStays (m = 4): an abort for the missing publication
// judged on its signer S_0's attestation alone charges nobody yet, and
// S_2, whose part the others lack, once theirs came. Before, S_0 first,
// then S_2: the charge moved.
func TestAbortNoPubChargeStays(t *testing.T) {
	f := newFive(t)
	ctx := Context{Epoch: f.ctx.Epoch, Chain: f.chain[:4], Final: true}
	judge := func(as ...wire.Attest) peer.ID {
		ev := &wire.Charge{Kind: wire.EvAbort, Number: 9, Item: f.abort}
		MergeAttests(ev, as)
		p, _, err := ChargeOf(ev, ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := f.sign(0, 1<<2|1<<3)
	if p := judge(own); p != "" {
		t.Errorf("on S_0's attestation alone: charged %s, want nobody yet", p.ShortString())
	}
	if p := judge(own, f.sign(1, 1<<2|1<<3), f.sign(3, 1<<2)); p != f.chain[2] {
		t.Errorf("with the others': charged %q, want S_2", p.ShortString())
	}
}

// TestEquivocatorWord: S_2 gives attestation A (lacking parts 1, 3, 4)
// to some and A' (lacking 3 and 4) to others. Every server holding both
// charges S_2, in every order of arrival: its second is pivotal (with
// its word the parts both lack, part 1 is not backed and S_2's own part
// is; with the parts either lacks, S_1's is). One holding A alone
// charges S_1: with the honest servers split on part 1 (S_4 holds it),
// which their signed relays prevent (node TestEdgeSplitCharged), the
// move is between the two corrupt servers, never onto an honest one.
// The two alone charge nobody yet.
func TestEquivocatorWord(t *testing.T) {
	f := newFive(t)
	const tail = 1<<3 | 1<<4
	a, a2 := f.sign(2, 1<<1|tail), f.sign(2, tail)
	base := []wire.Attest{f.sign(0, 1<<1|1<<2|tail), f.sign(3, 1<<1|1<<2|1<<4), f.sign(4, 1<<2|1<<3), f.sign(1, 1<<2|tail)}
	for _, c := range []struct {
		order []wire.Attest
		want  peer.ID
	}{
		{append(append([]wire.Attest{a}, base...), a2), f.chain[2]},
		{append(append([]wire.Attest{a2}, base...), a), f.chain[2]},
		{append([]wire.Attest{a}, base...), f.chain[1]},
		{[]wire.Attest{a2, a}, ""},
		{[]wire.Attest{a, a2}, ""},
	} {
		for _, kind := range []uint8{wire.EvVoid, wire.EvAbort} {
			if p := f.judge(t, kind, c.order...); p != c.want {
				t.Errorf("kind %d, %v: charged %q, want %q", kind, lacks(c.order), p.ShortString(), c.want.ShortString())
			}
		}
	}
}

// TestSelectionFramesNoDownstream (the rev40a review's scenario, m = 5,
// S_2 alone corrupt, passing nothing on in round 5): S_2 signs the abort
// for the missing publication itself and hands it on with the
// attestations it chose, its own (lacking part 3 only), S_0's and S_1's.
// Before, part 3 was backed by three of four and the honest S_3 charged;
// now parts 2 to 4 may still be backed by the attestations to come:
// nobody yet, and S_2 once S_3's and S_4's came.
func TestSelectionFramesNoDownstream(t *testing.T) {
	f := newFive(t)
	a := &wire.Abort{Epoch: f.ctx.Epoch, Number: 9, Round: 5, Kind: wire.AbortNoPub, Signer: []byte(f.chain[2]), Reason: []byte("no publication")}
	judge := func(as ...wire.Attest) peer.ID {
		ev := &wire.Charge{Kind: wire.EvAbort, Number: 9, Item: f.abortBy(t, 2, a)}
		MergeAttests(ev, as)
		p, _, err := ChargeOf(ev, f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const rest = 1<<2 | 1<<3 | 1<<4
	own, s0, s1 := f.sign(2, 1<<3), f.sign(0, rest), f.sign(1, rest)
	if p := judge(own, s0, s1); p != "" {
		t.Errorf("S_2's selection: charged %q, want nobody yet", p.ShortString())
	}
	if p := judge(own, s0, s1, f.sign(3, 1<<2|1<<4), f.sign(4, 1<<2|1<<3)); p != f.chain[2] {
		t.Errorf("every attestation: charged %q, want S_2", p.ShortString())
	}
}

// TestAbortBeforeFinalCharged (the rev42a review's F3, m = 5): honest S_3
// aborts for S_2's missing part, which S_1, S_3 and S_4 attest lacking;
// S_2 missed the final descriptor. Judged under no final certificate (at
// S_2, before the final one came) the abort charged its signer, the
// honest S_3, at once, and S_2 once the final certificate came: the
// charge moved. Now nobody under no final certificate, S_2 under it.
func TestAbortBeforeFinalCharged(t *testing.T) {
	f := newFive(t)
	a := &wire.Abort{Epoch: f.ctx.Epoch, Number: 9, Round: 5, Kind: wire.AbortNoPub, Signer: []byte(f.chain[3]), Reason: []byte("no publication")}
	ev := &wire.Charge{Kind: wire.EvAbort, Number: 9, Item: f.abortBy(t, 3, a)}
	MergeAttests(ev, []wire.Attest{f.sign(1, 1<<2|1<<3|1<<4), f.sign(3, 1<<2|1<<3|1<<4), f.sign(4, 1<<2|1<<3)})
	ctx := f.ctx
	ctx.Final = false
	if p, _, err := ChargeOf(ev, ctx); err != nil || p != "" {
		t.Errorf("under no final certificate: charged %q (%v), want nobody", p.ShortString(), err)
	}
	if p, _, err := ChargeOf(ev, f.ctx); err != nil || p != f.chain[2] {
		t.Errorf("under the final certificate: charged %q (%v), want S_2", p.ShortString(), err)
	}
}

// TestNoListChargeStays (the rev41a review's case, m = 5): an abort for
// S_0's missing list (kind 7) signed by S_2, judged on S_2's attestation
// alone, charged S_2 (not backed), then S_0 once S_3's and S_4's came.
// Now it charges S_2 whatever attestations came (TestNoListChargesSigner),
// so the charge never moves.
func TestNoListChargeStays(t *testing.T) {
	f := newFive(t)
	a := &wire.Abort{Epoch: f.ctx.Epoch, Number: 9, Round: 5, Kind: wire.AbortNoList, Signer: []byte(f.chain[2]), Reason: []byte("no list")}
	item := f.abortBy(t, 2, a)
	at := func(by int, bits uint64) wire.Attest {
		x := wire.Attest{AttestReq: wire.AttestReq{Epoch: f.ctx.Epoch, Number: 9, Kind: wire.AbortNoList, Round: 5}, Lacking: bits, Signer: uint16(by)}
		x.Sig, _ = proto.Sign(f.privs[by], AttestDigest(&x))
		return x
	}
	judge := func(as ...wire.Attest) peer.ID {
		ev := &wire.Charge{Kind: wire.EvAbort, Number: 9, Item: item}
		MergeAttests(ev, as)
		p, _, err := ChargeOf(ev, f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name string
		as   []wire.Attest
		want peer.ID
	}{
		{"the signer's alone", []wire.Attest{at(2, 1)}, f.chain[2]},
		{"three of four", []wire.Attest{at(2, 1), at(3, 1), at(4, 1)}, f.chain[2]},
		{"two of four lacking, two holding", []wire.Attest{at(1, 0), at(2, 1), at(3, 1), at(4, 0)}, f.chain[2]},
		{"an equivocator", []wire.Attest{at(2, 1), at(3, 1), at(3, 0)}, f.chain[2]},
	} {
		if p := judge(c.as...); p != c.want {
			t.Errorf("%s: charged %q, want %q", c.name, p.ShortString(), c.want.ShortString())
		}
	}
}

// TestEquivocationMovesNoCharge (the rev41a review's case): S_1 withheld
// its part; every attestation is in, S_0, S_2, S_3 and S_4 lacking part
// 1: S_1 is charged. S_2, S_1's corrupt partner, then hands the chain a
// second attestation (nothing lacking). Before, two attestations of one
// signer charged it: the given charge moved from S_1 to S_2, when and
// onto whom the pair chose. Now an equivocator's word is the parts all
// its attestations lack: the three honest servers still back S_1.
func TestEquivocationMovesNoCharge(t *testing.T) {
	f := newFive(t)
	const rest = 1<<1 | 1<<2 | 1<<3 | 1<<4
	as := []wire.Attest{f.sign(0, rest), f.sign(1, 0), f.sign(2, rest), f.sign(3, rest), f.sign(4, rest)}
	for _, kind := range []uint8{wire.EvAbort, wire.EvVoid} {
		before := f.judge(t, kind, as...)
		if before != f.chain[1] {
			t.Fatalf("kind %d: charged %q with every attestation in, want S_1", kind, before.ShortString())
		}
		for _, second := range []uint64{0, 1 << 0, 1 << 3} {
			if after := f.judge(t, kind, append(append([]wire.Attest{}, as...), f.sign(2, second))...); after != before {
				t.Errorf("kind %d: S_2's second attestation (lacking %s) moved the charge from S_1 to %q", kind, bits(second), after.ShortString())
			}
		}
	}
}
