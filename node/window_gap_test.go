package node

import (
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/window"
)

// gapCert is a certificate of number n of kind k, with an epoch id if it
// names one (signatures do not matter to the walk).
func gapCert(n uint64, k uint8) wire.Cert {
	c := wire.Cert{Kind: k, Number: n, Chain: [][]byte{{1}}}
	if k != wire.CertTimeout {
		c.Epoch = [32]byte{byte(n)}
	}
	return c
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
			d.Gap[0].Epoch = proto.EpochID(descs[n-2])
		}
		descs[n] = d
		items = append(items, wire.WindowItem{Number: n, Epoch: proto.EpochID(d), Group: window.GroupBytes(d)})
		prev = wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: proto.EpochID(d), Chain: [][]byte{{1}}}
		if n == 6 || n == 8 {
			prev = gapCert(n, wire.CertTimeout) // 6 and 8 time out
			items = items[:len(items)-1]
			delete(descs, n)
		}
	}
	d := &wire.Descriptor{Number: 9, Previous: prev, Gap: []wire.Cert{{Kind: wire.CertFinal, Number: 7, Epoch: proto.EpochID(descs[7]), Chain: [][]byte{{1}}}}}
	walked := func(w proto.WindowWalk) []uint64 {
		var out []uint64
		for _, it := range w.Items {
			out = append(out, it.Number)
		}
		return out
	}
	if got, want := walked(proto.WalkWindow(d, items)), []uint64{7, 5, 4, 3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("the walk from 9 past two timeouts reached %v, want %v", got, want)
	}
	if gd := proto.PreviousGroup(d, items); gd == nil || gd.Number != 7 {
		t.Errorf("the epoch before 9 past 8's timeout: %v, want 7's", gd)
	}
	d.Gap = nil
	if got := walked(proto.WalkWindow(d, items)); len(got) != 0 {
		t.Errorf("the walk from 9 without its Gap reached %v, want nothing", got)
	}
	if gd := proto.PreviousGroup(d, items); gd != nil {
		t.Errorf("the epoch before 9 without its Gap: %d", gd.Number)
	}
}
