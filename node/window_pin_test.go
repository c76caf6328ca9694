package node

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestWindowPinRules (§6.3 v3): a member refuses a Prepare whose window
// is not at most DecoyEpochs epochs, newest first, of numbers N − 2 down to
// the look-back, or that leaves out an epoch N − 1's descriptor pinned
// while N's window has room for it or pins an older one (the leader's
// signed choice, public in the Prepare). An epoch that fell out of the
// look-back, or behind DecoyEpochs newer ones, may go.
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
		{refs(N - WindowLookback), true},
		{refs(19), false},                 // N − 1: its record may still be in the making
		{refs(18, 17, 16, 15, 14), false}, // more than DecoyEpochs
		{refs(17, 18), false},             // not newest first
		{refs(17, 17), false},             // twice
		{refs(N - WindowLookback - 1), false},
	} {
		if err := checkWindowRefs(N, c.refs); (err == nil) != c.ok {
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
		r, left := leftOutCertified(N, prev, c.window)
		if left != (c.left != 0) || left && r.Number != c.left {
			t.Errorf("window %v after %v: left out %v (%d), want %d", c.window, prev, left, r.Number, c.left)
		}
	}
	// Another record of a pinned epoch is not the pinned one.
	other := refs(18, 17, 16, 15)
	other[1].Closing[0]++
	if _, left := leftOutCertified(N, prev, other); !left {
		t.Error("a window pinning another record of epoch 17 left nothing out")
	}
	// An epoch beyond N's look-back may go.
	if _, left := leftOutCertified(N+8, prev, nil); left {
		t.Error("epochs beyond the look-back counted as left out")
	}
}
