// Package window is what a server keeps and serves of the window before
// an epoch (docs/protocol.md §6.3 v3): each epoch's item (its descriptor
// without clients, closing record and decoy pool), kept by the digest of
// the record it carries, the walk a server checked for a number's
// Prepare, and the window it serves from them; with the pure rules of a
// Prepare's pinned window and its gap of certificates past a timeout
// (prepare.go), the leader's choice and a member's check of a pinned
// window (pin.go), and each epoch's decoy pool as a function of its
// published lists (pool.go). Items does no I/O but its store's and its
// server's (Source.Ask), and has its own leaf lock. Service (serve.go)
// serves the window to clients and to the group's servers, each in its
// slots, and asks the servers for it, over what it asks of its server
// (Peers); CheckGap is a member's check of a Prepare's gap of
// certificates. Package node says who a peer is (window.go).
package window

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Backing is the part of the server's store that keeps window items.
type Backing interface {
	PutWindowItem(number uint64, key [32]byte, b []byte) error
	WindowItem(number uint64, key [32]byte) ([]byte, error)
}

// Source is what Items asks of its server: the certificates kept here
// and the descriptors of epochs still in memory.
type Source interface {
	// CertOf is the certificate of number n kept here.
	CertOf(n uint64) (*wire.Cert, bool)
	// Group is the descriptor without clients of an epoch in memory
	// here (GroupBytes), or nil.
	Group(epoch [32]byte) []byte
	// Lack reports whether to serve descriptors only (a test's hook).
	Lack() bool
	// Unpinned reports whether windows go unpinned (a test's hook).
	Unpinned() bool
	// Ask asks the peers other than this server, servers of the group,
	// for the window before number, and returns what they gave.
	Ask(ctx context.Context, peers []peer.ID, number uint64) []wire.WindowItem
}

// Items keeps and serves a server's window items; mu is a leaf lock.
type Items struct {
	St  Backing
	Src Source
	Log *slog.Logger

	mu sync.Mutex
	// checked is the walk of the last Prepare whose window was checked
	// here (Check with keep), for the servers a member asks whether they
	// would serve before it takes the Prepare (ServedToServers).
	checked struct {
		number uint64
		refs   []Ref
	}
}

// ListPoolPairs returns a list's (position, id) pairs.
func ListPoolPairs(rl *wire.RoundList) []wire.PoolPair {
	out := make([]wire.PoolPair, len(rl.Pairs))
	for i, x := range rl.Pairs {
		out[i] = wire.PoolPair{Pos: x.Pos, ID: rl.PairID(i)}
	}
	return out
}

// GroupBytes is a descriptor without its clients and reveals: all a
// client needs to link an epoch to the one before and check its record.
func GroupBytes(d *wire.Descriptor) []byte {
	g := *d
	g.Clients, g.Reveals = nil, nil
	return g.Marshal()
}

// Window items are kept by the digest of the record they carry (§6.3
// v3): a record and the pool it signs are kept and served together, and
// a server that holds two records of one epoch (a first server that
// proposed twice) serves the one a walk pinned, with its own pool. The
// key of digest zero holds this server's own item of the epoch: its own
// record, or only the descriptor if it has none.
var (
	tagWindowItem = []byte("riffle/v3/window-item")
	tagWindowWalk = []byte("riffle/v3/window-walk")
)

// ItemKey is the store key of epoch's item carrying the record of digest
// dg (zero: this server's own item).
func ItemKey(epoch, dg [32]byte) [32]byte {
	return sha256.Sum256(slices.Concat(tagWindowItem, epoch[:], dg[:]))
}

// walkKey is the store key of the walk checked for number's Prepare.
func walkKey(number uint64) [32]byte {
	return sha256.Sum256(binary.BigEndian.AppendUint64(slices.Clone(tagWindowWalk), number))
}

// Put stores one window item under key.
func (ws *Items) Put(key [32]byte, it wire.WindowItem) {
	if err := ws.St.PutWindowItem(it.Number, key, (&wire.Window{Items: []wire.WindowItem{it}}).Marshal()); err != nil {
		ws.Log.Error("keep window item", "err", err)
	}
}

// Item returns the item stored under key for number.
func (ws *Items) Item(number uint64, key [32]byte) (wire.WindowItem, bool) {
	b, err := ws.St.WindowItem(number, key)
	if err != nil {
		return wire.WindowItem{}, false
	}
	var kept wire.Window
	if kept.Unmarshal(b) != nil || len(kept.Items) != 1 {
		return wire.WindowItem{}, false
	}
	return kept.Items[0], true
}

// Ref is one epoch of a checked walk: its number, id and the digest
// of the record the walk pinned (zero if none).
type Ref struct {
	Number uint64
	Epoch  [32]byte
	Digest [32]byte
}

// Refs returns the refs of a walk's items.
func Refs(items []wire.WindowItem) []Ref {
	out := make([]Ref, 0, len(items))
	for _, it := range items {
		r := Ref{Number: it.Number, Epoch: it.Epoch}
		var c wire.Closing
		if len(it.Closing) > 0 && c.Unmarshal(it.Closing, wire.MaxClosingRounds) == nil {
			r.Digest = proto.ClosingDigest(&c)
		}
		out = append(out, r)
	}
	return out
}

// SameRecord reports whether rec is a record of digest dg (zero: any,
// or none).
func SameRecord(rec []byte, dg [32]byte) bool {
	if dg == ([32]byte{}) {
		return true
	}
	var c wire.Closing
	return len(rec) > 0 && c.Unmarshal(rec, wire.MaxClosingRounds) == nil && proto.ClosingDigest(&c) == dg
}

// KeepWalk stores the walk this server checked for number's Prepare
// (node's takeWindow): what it serves as number's window (Served).
func (ws *Items) KeepWalk(number uint64, refs []Ref) {
	b := make([]byte, 0, len(refs)*72)
	for _, r := range refs {
		b = binary.BigEndian.AppendUint64(b, r.Number)
		b = append(b, r.Epoch[:]...)
		b = append(b, r.Digest[:]...)
	}
	if err := ws.St.PutWindowItem(number, walkKey(number), b); err != nil {
		ws.Log.Error("keep window item", "err", err)
	}
}

// Walk returns the walk checked here for number's Prepare.
func (ws *Items) Walk(number uint64) ([]Ref, bool) {
	b, err := ws.St.WindowItem(number, walkKey(number))
	if err != nil || len(b)%72 != 0 || len(b)/72 > proto.BudgetLookback {
		return nil, false
	}
	out := make([]Ref, len(b)/72)
	for i := range out {
		x := b[72*i:]
		out[i].Number = binary.BigEndian.Uint64(x)
		copy(out[i].Epoch[:], x[8:40])
		copy(out[i].Digest[:], x[40:72])
	}
	return out, true
}

// ServedItem is what this server holds of ref's epoch: the item of the
// pinned record if ref pins one, else its own item; the descriptor, if
// no item holds it, from memory. For number's window, an epoch beyond
// the pins' look-back is served as its descriptor only: the walk goes
// there for the budgets' certificates, and no window pins its pool.
func (ws *Items) ServedItem(r Ref, number uint64) wire.WindowItem {
	it, ok := ws.Item(r.Number, ItemKey(r.Epoch, r.Digest))
	if !ok && r.Digest != ([32]byte{}) {
		it, ok = ws.Item(r.Number, ItemKey(r.Epoch, [32]byte{}))
	}
	if !ok {
		it = wire.WindowItem{}
	}
	it.Number, it.Epoch = r.Number, r.Epoch
	if it.Group == nil {
		it.Group = ws.Src.Group(r.Epoch)
	}
	if ws.Src.Lack() || r.Number+proto.WindowLookback < number {
		it.Closing, it.Pool = nil, nil
	}
	return it
}

// named reports whether c is a certificate that names an epoch.
func named(c *wire.Cert) bool { return c.Kind == wire.CertFinal || c.Kind == wire.CertAbort }

// Served is what this server serves of the window before epoch
// number: for each number below it, back BudgetLookback numbers, the
// epoch's descriptor without clients, closing record and pool. For a
// number whose Prepare it checked, exactly the items of the walk it
// checked (the walked descriptors, the pinned records and their pools),
// whatever the kinds of the certificates it keeps (a member that keeps
// a timeout of K and signed K+1's Prepare, whose previous certificate is
// K's abort, serves K); else the epochs its own certificates name, down
// to a number whose Prepare it checked, and that walk below it.
func (ws *Items) Served(number uint64) []wire.WindowItem {
	if number < 2 {
		// Nothing lies below 1; and number − 1 of 0 wraps to 2^64 − 1,
		// where the loop's bound never holds: anyone's request for 0
		// would spin a core (TestWindowItemsZero).
		return nil
	}
	var out []wire.WindowItem
	for n := number - 1; n > 0 && n+proto.BudgetLookback >= number; n-- {
		if refs, ok := ws.Walk(n + 1); ok {
			for _, r := range refs {
				if r.Number <= n && r.Number+proto.BudgetLookback >= number {
					out = append(out, ws.ServedItem(r, number))
				}
			}
			break
		}
		cert, ok := ws.Src.CertOf(n)
		if !ok || !named(cert) {
			continue
		}
		out = append(out, ws.ServedItem(Ref{Number: n, Epoch: cert.Epoch}, number))
	}
	return out
}

// Held is what this server holds toward number's window, for its own
// checks (a leader's choice, a member's check of a Prepare): what it
// serves, and the epochs its own certificates name.
func (ws *Items) Held(number uint64) []wire.WindowItem {
	out := ws.Served(number)
	if _, ok := ws.Walk(number); !ok {
		return out
	}
	for n := number - 1; n > 0 && n+proto.BudgetLookback >= number; n-- {
		if cert, ok := ws.Src.CertOf(n); ok && named(cert) {
			out = append(out, ws.ServedItem(Ref{Number: n, Epoch: cert.Epoch}, number))
		}
	}
	return out
}

// Keep stores the parts of a walk's epochs that this server lacks:
// each item with a record under that record's digest, and as the epoch's
// own item where this server has none (not among the store's closing
// records, which mark an epoch whose rounds this server took whole: a
// server catches up an epoch until it holds its record, package
// catchup).
func (ws *Items) Keep(items []wire.WindowItem) {
	for _, it := range items {
		k := wire.WindowItem{Number: it.Number, Epoch: it.Epoch, Group: it.Group, Closing: it.Closing, Pool: it.Pool}
		var c wire.Closing
		if len(it.Closing) > 0 && c.Unmarshal(it.Closing, wire.MaxClosingRounds) == nil {
			key := ItemKey(it.Epoch, proto.ClosingDigest(&c))
			if _, ok := ws.Item(it.Number, key); !ok {
				ws.Put(key, k)
			}
		}
		own, ok := ws.Item(it.Number, ItemKey(it.Epoch, [32]byte{}))
		if !ok || len(own.Group) == 0 || len(own.Closing) == 0 && len(it.Closing) > 0 {
			ws.Put(ItemKey(it.Epoch, [32]byte{}), k)
		}
	}
}
