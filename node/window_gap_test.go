package node

import (
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
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
		{"timeouts to the look-back", prevT, gap(timeouts(WindowLookback - 1)...), true},
		{"timeouts past the look-back", prevT, gap(timeouts(WindowLookback)...), false},
		{"timeout, gap omitted", prevT, nil, false},
		{"stops at a timeout", prevT, gap(T, T), false},
		{"past an epoch", prevT, gap(F, F), false},
		{"a number skipped", prevT, skipped, false},
	} {
		if err := checkGapShape(N, &c.prev, c.gap); (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok %v", c.name, err, c.ok)
		}
	}
	// Near number 1 the gap ends there.
	if err := checkGapShape(2, &wire.Cert{Kind: T, Number: 1}, nil); err != nil {
		t.Errorf("number 2 after 1's timeout: %v", err)
	}
	if err := checkGapShape(2, &wire.Cert{Kind: T, Number: 1}, []wire.Cert{{}}); err == nil {
		t.Error("number 2 with an empty certificate in its gap: accepted")
	}
	one := []wire.Cert{gapCert(1, T)}
	if err := checkGapShape(3, &wire.Cert{Kind: T, Number: 2}, one); err != nil {
		t.Errorf("number 3 after two timeouts: %v", err)
	}
}

// TestWalkCrossesTimeout (§6.3 v3): the walk back from N's descriptor,
// whose previous certificate is N − 1's timeout, goes on through the Gap
// to N − 2's descriptor and on from there, as it would have from N − 1's:
// it reaches the same epochs, and the epoch before N is N − 2. Without the
// Gap it stops at the timeout.
func TestWalkCrossesTimeout(t *testing.T) {
	descs := map[uint64]*wire.Descriptor{}
	var items []wire.WindowItem
	var prev wire.Cert
	for n := uint64(1); n <= 8; n++ {
		d := &wire.Descriptor{Number: n, Params: testParams(2).Wire(), Previous: prev}
		if prev.Kind == wire.CertTimeout {
			d.Gap = []wire.Cert{gapCert(n-2, wire.CertFinal)}
			d.Gap[0].Epoch = epochID(descs[n-2])
		}
		descs[n] = d
		items = append(items, wire.WindowItem{Number: n, Epoch: epochID(d), Group: groupBytes(d)})
		prev = wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: epochID(d), Chain: [][]byte{{1}}}
		if n == 6 || n == 8 {
			prev = gapCert(n, wire.CertTimeout) // 6 and 8 time out
			items = items[:len(items)-1]
			delete(descs, n)
		}
	}
	d := &wire.Descriptor{Number: 9, Previous: prev, Gap: []wire.Cert{{Kind: wire.CertFinal, Number: 7, Epoch: epochID(descs[7]), Chain: [][]byte{{1}}}}}
	walked := func(w windowWalk) []uint64 {
		var out []uint64
		for _, it := range w.Items {
			out = append(out, it.Number)
		}
		return out
	}
	if got, want := walked(walkWindow(d, items)), []uint64{7, 5, 4, 3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("the walk from 9 past two timeouts reached %v, want %v", got, want)
	}
	if gd := previousGroup(d, items); gd == nil || gd.Number != 7 {
		t.Errorf("the epoch before 9 past 8's timeout: %v, want 7's", gd)
	}
	d.Gap = nil
	if got := walked(walkWindow(d, items)); len(got) != 0 {
		t.Errorf("the walk from 9 without its Gap reached %v, want nothing", got)
	}
	if gd := previousGroup(d, items); gd != nil {
		t.Errorf("the epoch before 9 without its Gap: %d", gd.Number)
	}
}
