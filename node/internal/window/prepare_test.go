package window

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// gapCert is a certificate of number n of kind k, with an epoch id if it
// names one (signatures do not matter to the shape).
func gapCert(n uint64, k uint8) wire.Cert {
	c := wire.Cert{Kind: k, Number: n, Chain: [][]byte{{1}}}
	if k != wire.CertTimeout {
		c.Epoch = [32]byte{byte(n)}
	}
	return c
}

// TestGapRules (§6.3 v3): the Gap a Prepare of N carries past N − 1's
// timeout holds the certificates of N − 2 down, a number at a time, each a
// timeout but the last, which names an epoch (final or abort) or is the
// look-back's last number; after any other previous certificate it is
// empty. A Gap that stops short (one certificate omitted), skips a number,
// goes on past an epoch or beyond the look-back is refused.
func TestGapRules(t *testing.T) {
	const N = 20
	T, F, A := wire.CertTimeout, wire.CertFinal, wire.CertAbort
	gap := func(kinds ...uint8) []wire.Cert {
		var out []wire.Cert
		for i, k := range kinds {
			out = append(out, gapCert(N-2-uint64(i), k))
		}
		return out
	}
	timeouts := func(n int) []uint8 {
		var out []uint8
		for range n {
			out = append(out, T)
		}
		return out
	}
	prevT, prevF := gapCert(N-1, T), gapCert(N-1, F)
	skipped := gap(T, F)
	skipped[1].Number--
	for _, c := range []struct {
		name string
		prev wire.Cert
		gap  []wire.Cert
		ok   bool
	}{
		{"final, no gap", prevF, nil, true},
		{"final with a gap", prevF, gap(F), false},
		{"timeout, then final", prevT, gap(F), true},
		{"timeout, then abort", prevT, gap(A), true},
		{"three timeouts, then final", prevT, gap(T, T, F), true},
		{"timeouts to the look-back", prevT, gap(timeouts(proto.WindowLookback - 1)...), true},
		{"timeouts past the look-back", prevT, gap(timeouts(proto.WindowLookback)...), false},
		{"timeout, gap omitted", prevT, nil, false},
		{"stops at a timeout", prevT, gap(T, T), false},
		{"past an epoch", prevT, gap(F, F), false},
		{"a number skipped", prevT, skipped, false},
	} {
		if err := CheckGapShape(N, &c.prev, c.gap); (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok %v", c.name, err, c.ok)
		}
	}
	// Near number 1 the gap ends there.
	if err := CheckGapShape(2, &wire.Cert{Kind: T, Number: 1}, nil); err != nil {
		t.Errorf("number 2 after 1's timeout: %v", err)
	}
	if err := CheckGapShape(2, &wire.Cert{Kind: T, Number: 1}, []wire.Cert{{}}); err == nil {
		t.Error("number 2 with an empty certificate in its gap: accepted")
	}
	one := []wire.Cert{gapCert(1, T)}
	if err := CheckGapShape(3, &wire.Cert{Kind: T, Number: 2}, one); err != nil {
		t.Errorf("number 3 after two timeouts: %v", err)
	}
}

// TestWindowPinRules (§6.3 v3): a member refuses a Prepare whose window
// is not at most proto.DecoyEpochs epochs, newest first, of numbers N − 2 down to
// the look-back, or that leaves out an epoch N − 1's descriptor pinned
// while N's window has room for it or pins an older one (the leader's
// signed choice, public in the Prepare). An epoch that fell out of the
// look-back, or behind proto.DecoyEpochs newer ones, may go.
func TestWindowPinRules(t *testing.T) {
	ref := func(n uint64) wire.WindowRef {
		return wire.WindowRef{Number: n, Epoch: [32]byte{byte(n)}, Closing: [32]byte{byte(n), 1}}
	}
	refs := func(ns ...uint64) []wire.WindowRef {
		var out []wire.WindowRef
		for _, n := range ns {
			out = append(out, ref(n))
		}
		return out
	}
	const N = 20
	for _, c := range []struct {
		refs []wire.WindowRef
		ok   bool
	}{
		{nil, true},
		{refs(18, 17, 15, 14), true},
		{refs(17), true},
		{refs(N - proto.WindowLookback), true},
		{refs(19), false},                 // N − 1: its record may still be in the making
		{refs(18, 17, 16, 15, 14), false}, // more than proto.DecoyEpochs
		{refs(17, 18), false},             // not newest first
		{refs(17, 17), false},             // twice
		{refs(N - proto.WindowLookback - 1), false},
	} {
		if err := CheckWindowRefs(N, c.refs); (err == nil) != c.ok {
			t.Errorf("window %v of %d: err %v, want ok %v", c.refs, N, err, c.ok)
		}
	}
	prev := refs(17, 16, 15, 14) // N − 1's window
	for _, c := range []struct {
		window []wire.WindowRef
		left   uint64 // 0: nothing left out
	}{
		{refs(18, 17, 16, 15), 0}, // 14 behind four newer ones
		{refs(17, 16, 15, 14), 0},
		{refs(18, 17, 15, 14), 16},
		{refs(18, 17), 16}, // room for 16
		{refs(18, 17, 16), 15},
		{nil, 17},
	} {
		r, left := LeftOutCertified(N, prev, c.window)
		if left != (c.left != 0) || left && r.Number != c.left {
			t.Errorf("window %v after %v: left out %v (%d), want %d", c.window, prev, left, r.Number, c.left)
		}
	}
	// Another record of a pinned epoch is not the pinned one.
	other := refs(18, 17, 16, 15)
	other[1].Closing[0]++
	if _, left := LeftOutCertified(N, prev, other); !left {
		t.Error("a window pinning another record of epoch 17 left nothing out")
	}
	// An epoch beyond N's look-back may go.
	if _, left := LeftOutCertified(N+8, prev, nil); left {
		t.Error("epochs beyond the look-back counted as left out")
	}
}
