package proto

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// The walk back from an open descriptor to its decoy window (§6.3 v3),
// which a leader, a server that holds a window and a client each run.

// PoolEpoch is one epoch of the window, checked against its record:
// its pool and the manifest ids its lists named. IDLess: the record
// signed a pool of the layout before the ids (wire.PoolV1, an older
// build's), which names none; the same for every client, as the record
// fixes the layout.
type PoolEpoch struct {
	Number    uint64
	ID        [32]byte
	Total     uint32
	Sample    []wire.PoolPair
	Manifests [][32]byte
	IDLess    bool
}

// BudgetWalk is what the walk back from an open descriptor pinned of the
// refusal budgets (a client's budgetView): the certificates the walked
// descriptors carry, the open one's first, and the walked epochs' chains
// by number.
type BudgetWalk struct {
	Certs  []wire.Cert
	Chains map[uint64][]peer.ID
}

// PreviousGroup returns the descriptor of the epoch before d (the one its
// certificate names, or past a timeout the one its Gap ends at) from
// items, or nil.
func PreviousGroup(d *wire.Descriptor, items []wire.WindowItem) *wire.Descriptor {
	prev, ok := CrossGap(d)
	if !ok {
		return nil
	}
	for i := range items {
		if items[i].Epoch == prev.Epoch {
			if gd := LinkedDescriptor(items[i].Group, prev.Epoch, prev.Number); gd != nil {
				return gd
			}
		}
	}
	return nil
}

// CrossGap is the certificate the walk back from d goes on from: d's
// previous one if it names an epoch (final or abort), else, past a
// timeout, the last of d's Gap if that names one and the Gap runs down
// from the timeout a number at a time (§6.3 v3; the members checked it,
// the node's checkGap). ok is false where the walk ends.
func CrossGap(d *wire.Descriptor) (wire.Cert, bool) {
	prev := d.Previous
	if prev.Kind == wire.CertTimeout && len(d.Gap) > 0 && len(d.Gap) <= WindowLookback {
		for i := range d.Gap {
			if d.Gap[i].Number+uint64(i)+1 != prev.Number {
				return wire.Cert{}, false
			}
		}
		prev = d.Gap[len(d.Gap)-1]
	}
	return prev, prev.Kind == wire.CertFinal || prev.Kind == wire.CertAbort
}

// WindowWalk is what a walk back from an open descriptor found, all of it
// pinned by that descriptor: the window (newest first), the checked
// records of its epochs by id, what the walked descriptors show of the
// servers' refusal budgets (a client's budgetView), and the walked epochs'
// parts that checked (a server keeps them).
type WindowWalk struct {
	Pools  []*PoolEpoch
	Recs   map[[32]byte]*wire.Closing
	Budget BudgetWalk
	Items  []wire.WindowItem
	// Missing counts the pinned epochs whose record or pool no
	// candidate gave.
	Missing int
	// Short: the walk stopped at a descriptor no candidate gave, above
	// the budgets' depth (BudgetLookback), where the certificates said
	// it goes on.
	Short bool
}

// ResolveWindow is the window of descriptor d (§6.3 v3): exactly the
// epochs d.Window pins, each with the record of the pinned digest and
// its pool, reached by the walk back from d, which goes on to the
// budgets' depth. ok is false if any pinned epoch is missing or the walk
// is short of that depth: the window is not held.
func ResolveWindow(d *wire.Descriptor, got []wire.WindowItem) (WindowWalk, bool) {
	w := WalkBack(d, got, true)
	return w, w.Missing == 0 && !w.Short
}

// WalkWindow is the rule before the certified window, kept for the
// leader's choice of what to pin (and the tests' control): the last
// DecoyEpochs final epochs of number at most d.Number−2 whose record and
// pool some candidate gave.
func WalkWindow(d *wire.Descriptor, got []wire.WindowItem) WindowWalk {
	return WalkBack(d, got, false)
}

// WalkBack walks back from descriptor d through the certificates the
// descriptors carry, past a timeout through the Gap of the descriptor
// after it, down to number d.Number−BudgetLookback, taking each part
// (descriptor, record, pool) from got only if it checks; with pinned, the
// window is the epochs d.Window pins, else WalkWindow's rule (within
// WindowLookback).
//
// The budgets (a client's budgetView) are the certificates of numbers
// d.Number−1 down to d.Number−BudgetLookback that the walk passes, and the
// chains of the walked epochs: the same for every client of d, since each
// must reach that depth to hold the window (Short) and nothing below it
// counts, whatever older descriptors a server hands one client.
func WalkBack(d *wire.Descriptor, got []wire.WindowItem, pinned bool) WindowWalk {
	cands := map[[32]byte][]*wire.WindowItem{}
	for i := range got {
		cands[got[i].Epoch] = append(cands[got[i].Epoch], &got[i])
	}
	refs := map[[32]byte]wire.WindowRef{}
	if pinned {
		for _, r := range d.Window {
			refs[r.Epoch] = r
		}
	}
	w := WindowWalk{Recs: map[[32]byte]*wire.Closing{}, Budget: BudgetWalk{Chains: map[uint64][]peer.ID{}}}
	deep := func(n uint64) bool { return n+BudgetLookback >= d.Number }
	certs := func(cs ...wire.Cert) {
		for _, c := range cs {
			if c.Kind != wire.CertNone && deep(c.Number) {
				w.Budget.Certs = append(w.Budget.Certs, c)
			}
		}
	}
	at := d // the descriptor whose certificates the walk follows
	certs(d.Previous)
	// Each step goes down at least a number: BudgetLookback steps at most.
	for step := 0; step < BudgetLookback; step++ {
		prev, ok := CrossGap(at)
		if !ok || !deep(prev.Number) || prev.Number >= at.Number {
			break // the walk ends here for every client alike
		}
		if at.Previous.Kind == wire.CertTimeout {
			// Past a timeout: the Gap's aborts count as those of
			// the certificates the walk passes.
			certs(at.Gap...)
		}
		id, num := prev.Epoch, prev.Number
		var gd *wire.Descriptor
		var gb []byte
		for _, x := range cands[id] {
			if gd = LinkedDescriptor(x.Group, id, num); gd != nil {
				gb = x.Group
				break
			}
		}
		if gd == nil {
			w.Short = true // no candidate gave it
			break
		}
		it := wire.WindowItem{Number: num, Epoch: id, Group: gb}
		var pe *PoolEpoch
		var rec *wire.Closing
		if r, ok := refs[id]; pinned && ok && r.Number == num && prev.Kind == wire.CertFinal {
			pe, rec, it.Closing, it.Pool = CheckedPool(gd, id, cands[id], &r.Closing)
			delete(refs, id)
		} else if !pinned && prev.Kind == wire.CertFinal && num+2 <= d.Number && num+WindowLookback >= d.Number && len(w.Pools) < DecoyEpochs {
			pe, rec, it.Closing, it.Pool = CheckedPool(gd, id, cands[id], nil)
		}
		if pe != nil {
			pe.Number = num
			w.Pools = append(w.Pools, pe)
			w.Recs[id] = rec
		}
		w.Items = append(w.Items, it)
		if ch, err := DescChain(gd); err == nil {
			w.Budget.Chains[num] = ch
		}
		certs(gd.Previous)
		at = gd
	}
	w.Missing = len(d.Window) - len(w.Pools)
	if !pinned {
		w.Missing = 0
	}
	return w
}

// DescChain returns a descriptor's chain.
func DescChain(d *wire.Descriptor) ([]peer.ID, error) {
	out := make([]peer.ID, 0, len(d.Group))
	for _, g := range d.Group {
		p, err := peer.IDFromBytes(g.PeerID)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// LinkedDescriptor decodes a descriptor without clients and returns it if
// it is the one of epoch id and number num.
func LinkedDescriptor(b []byte, id [32]byte, num uint64) *wire.Descriptor {
	if len(b) == 0 {
		return nil
	}
	var d wire.Descriptor
	if err := d.Unmarshal(b, GenericLimits()); err != nil || d.Number != num || EpochID(&d) != id {
		return nil
	}
	return &d
}

// CheckedPool returns epoch id's pool and record, and their encodings:
// a candidate record that verifies against the epoch's chain (and, if
// want is set, has that digest) with a candidate pool that matches it.
// Every record is tried, its own item's pool first: an epoch may have two
// valid records (a first server that proposed twice), and a server that
// serves one must not hide the other's pool.
func CheckedPool(d *wire.Descriptor, id [32]byte, cands []*wire.WindowItem, want *[32]byte) (*PoolEpoch, *wire.Closing, []byte, []byte) {
	chain, err := DescChain(d)
	if err != nil {
		return nil, nil, nil, nil
	}
	v := &View{ID: id, Desc: d, Chain: chain}
	tried := map[[32]byte]bool{}
	for _, x := range cands {
		var c wire.Closing
		if len(x.Closing) == 0 || c.Unmarshal(x.Closing, wire.MaxClosingRounds) != nil {
			continue
		}
		dg := ClosingDigest(&c)
		if tried[dg] || want != nil && dg != *want || CheckClosing(v, &c) != nil {
			continue
		}
		tried[dg] = true
		pools := append([]*wire.WindowItem{x}, cands...)
		for _, y := range pools {
			var p wire.DecoyPool
			if len(y.Pool) > 0 && p.Unmarshal(y.Pool) == nil && CheckPool(&c, &p) == nil {
				return &PoolEpoch{ID: id, Total: p.Total, Sample: p.Sample, Manifests: p.Manifests, IDLess: p.IDLess()}, &c, x.Closing, y.Pool
			}
		}
	}
	return nil, nil, nil, nil
}
