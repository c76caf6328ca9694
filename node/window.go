package node

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// The group's decoy pool (docs/protocol.md §6.3 v3). An epoch's pool is a
// canonical sample of the distinct (position, id) pairs of its published
// lists: the MaxPoolPairs pairs of lowest key H(seed ‖ position ‖ id),
// where seed hashes the closing record's per-round states and list
// digests. The seed is fixed only once the last list is, so nobody can
// grind an id into or out of the sample, and it does not depend on the
// pool digest it helps make. Every signer of the closing record computes
// the pool from the lists it holds and signs its digest and the number of
// pairs it was drawn from (closing.go): a client checks a pool against
// the record alone. Draws weigh each epoch by its pairs, so the sample
// keeps the weights demand gave.

// listPoolPairs returns a list's (position, id) pairs.
func listPoolPairs(rl *wire.RoundList) []wire.PoolPair {
	out := make([]wire.PoolPair, len(rl.Pairs))
	for i, x := range rl.Pairs {
		out[i] = wire.PoolPair{Pos: x.Pos, ID: rl.PairID(i)}
	}
	return out
}

// epochPoolPairs returns the distinct pairs of the rounds record c states
// published, from the lists this server holds or signed; ok is false if
// it lacks one. Call with s.mu held.
func epochPoolPairs(e *sepoch, c *wire.Closing) (out []wire.PoolPair, ok bool) {
	seen := map[wire.PoolPair]bool{}
	for r, cr := range c.Rounds {
		if cr.State != wire.ClosedPublished {
			continue
		}
		x := e.rounds[uint32(r)]
		var ps []wire.PoolPair
		switch {
		case x != nil && x.list != nil && listDigest(x.list) == cr.List:
			ps = listPoolPairs(x.list)
		case x != nil && x.signedState == wire.ClosedPublished && x.signed == cr.List:
			ps = x.signedPairs
		default:
			return nil, false
		}
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, true
}

// setPool fills record c's pool fields from what this server holds; ok is
// false if it lacks a published round's list. Call with s.mu held.
func setPool(e *sepoch, c *wire.Closing) (*wire.DecoyPool, bool) {
	pairs, ok := epochPoolPairs(e, c)
	if !ok {
		return nil, false
	}
	c.Pairs, c.Pool = 0, [32]byte{}
	pool := samplePool(c, pairs)
	c.Pairs, c.Pool = pool.Total, poolDigest(pool)
	return pool, true
}

// groupBytes is a descriptor without its clients and reveals: all a
// client needs to link an epoch to the one before and check its record.
func groupBytes(d *wire.Descriptor) []byte {
	g := *d
	g.Clients, g.Reveals = nil, nil
	return g.Marshal()
}

// keepWindowItem keeps what a client needs of epoch e once its closing
// record rec (all its signatures; c is the same without them) is stored
// here: its descriptor without clients, the record and the pool, as one
// item under the record's digest (so that a walk pinning this record
// finds it) and as this server's own item of the epoch.
func (s *Server) keepWindowItem(e *sepoch, c *wire.Closing, rec []byte) {
	s.mu.Lock()
	pool, ok := setPool(e, c)
	v := e.final
	s.mu.Unlock()
	if !ok {
		s.log.Warn("decoy pool: a published list is missing here")
		return
	}
	it := wire.WindowItem{Number: v.Desc.Number, Epoch: v.ID, Group: groupBytes(v.Desc), Closing: rec, Pool: pool.Marshal()}
	s.putItem(itemKey(v.ID, closingDigest(c)), it)
	s.putItem(itemKey(v.ID, [32]byte{}), it)
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

// itemKey is the store key of epoch's item carrying the record of digest
// dg (zero: this server's own item).
func itemKey(epoch, dg [32]byte) [32]byte {
	return sha256.Sum256(slices.Concat(tagWindowItem, epoch[:], dg[:]))
}

// walkKey is the store key of the walk checked for number's Prepare.
func walkKey(number uint64) [32]byte {
	return sha256.Sum256(binary.BigEndian.AppendUint64(slices.Clone(tagWindowWalk), number))
}

// putItem stores one window item under key.
func (s *Server) putItem(key [32]byte, it wire.WindowItem) {
	if err := s.store.PutWindowItem(it.Number, key, (&wire.Window{Items: []wire.WindowItem{it}}).Marshal()); err != nil {
		s.log.Error("keep window item", "err", err)
	}
}

// item returns the item stored under key for number.
func (s *Server) item(number uint64, key [32]byte) (wire.WindowItem, bool) {
	b, err := s.store.WindowItem(number, key)
	if err != nil {
		return wire.WindowItem{}, false
	}
	var kept wire.Window
	if kept.Unmarshal(b) != nil || len(kept.Items) != 1 {
		return wire.WindowItem{}, false
	}
	return kept.Items[0], true
}

// walkRef is one epoch of a checked walk: its number, id and the digest
// of the record the walk pinned (zero if none).
type walkRef struct {
	Number uint64
	Epoch  [32]byte
	Digest [32]byte
}

// walkRefs returns the refs of a walk's items.
func walkRefs(items []wire.WindowItem) []walkRef {
	out := make([]walkRef, 0, len(items))
	for _, it := range items {
		r := walkRef{Number: it.Number, Epoch: it.Epoch}
		var c wire.Closing
		if len(it.Closing) > 0 && c.Unmarshal(it.Closing, wire.MaxClosingRounds) == nil {
			r.Digest = closingDigest(&c)
		}
		out = append(out, r)
	}
	return out
}

// sameRecord reports whether rec is a record of digest dg (zero: any,
// or none).
func sameRecord(rec []byte, dg [32]byte) bool {
	if dg == ([32]byte{}) {
		return true
	}
	var c wire.Closing
	return len(rec) > 0 && c.Unmarshal(rec, wire.MaxClosingRounds) == nil && closingDigest(&c) == dg
}

// keepWalk stores the walk this server checked for number's Prepare
// (takeWindow): what it serves as number's window (windowItems).
func (s *Server) keepWalk(number uint64, refs []walkRef) {
	b := make([]byte, 0, len(refs)*72)
	for _, r := range refs {
		b = binary.BigEndian.AppendUint64(b, r.Number)
		b = append(b, r.Epoch[:]...)
		b = append(b, r.Digest[:]...)
	}
	if err := s.store.PutWindowItem(number, walkKey(number), b); err != nil {
		s.log.Error("keep window item", "err", err)
	}
}

// walkOf returns the walk checked here for number's Prepare.
func (s *Server) walkOf(number uint64) ([]walkRef, bool) {
	b, err := s.store.WindowItem(number, walkKey(number))
	if err != nil || len(b)%72 != 0 || len(b)/72 > BudgetLookback {
		return nil, false
	}
	out := make([]walkRef, len(b)/72)
	for i := range out {
		x := b[72*i:]
		out[i].Number = binary.BigEndian.Uint64(x)
		copy(out[i].Epoch[:], x[8:40])
		copy(out[i].Digest[:], x[40:72])
	}
	return out, true
}

// servedItem is what this server holds of ref's epoch: the item of the
// pinned record if ref pins one, else its own item; the descriptor, if
// no item holds it, from memory. For number's window, an epoch beyond
// the pins' look-back is served as its descriptor only: the walk goes
// there for the budgets' certificates, and no window pins its pool.
func (s *Server) servedItem(r walkRef, number uint64) wire.WindowItem {
	it, ok := s.item(r.Number, itemKey(r.Epoch, r.Digest))
	if !ok && r.Digest != ([32]byte{}) {
		it, ok = s.item(r.Number, itemKey(r.Epoch, [32]byte{}))
	}
	if !ok {
		it = wire.WindowItem{}
	}
	it.Number, it.Epoch = r.Number, r.Epoch
	if it.Group == nil {
		it.Group = s.heldGroup(r.Epoch)
	}
	if s.hookLackWindow() || r.Number+WindowLookback < number {
		it.Closing, it.Pool = nil, nil
	}
	return it
}

// onWindowReq answers a client's request for the window before an epoch
// number: for each number below it, back BudgetLookback numbers, the
// certified epoch's descriptor without clients, closing record and pool
// as far as this server holds them. The client checks every part.
func (s *Server) onWindowReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var q wire.WindowReq
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if s.hookWindowRefuse(from) {
		return 0, nil, errors.New("node: window request refused")
	}
	// Any peer may ask, before it registers: a window costs what a few
	// index pages cost, so it takes one of the window slots
	// (maxWindowServing, one a peer, maxWindowPerRange a range), held
	// until the reply is written or its short deadline passed.
	if err := s.windowSlots.enterWindow(ctx, from, s.addrRange(from)); err != nil {
		return 0, nil, err
	}
	w := wire.Window{Items: s.windowItems(q.Number)}
	s.hookWindowReply(from, &w)
	return wire.TypeWindow, w.Marshal(), nil
}

// onServerWindowReq answers, over the epoch protocol, a server of the
// group that asks for the window before an epoch number (askWindow): a
// member of N's chain that lacks a part of the window N's Prepare pins,
// N's leader choosing it, or a server asked whether it would serve. It
// takes none of the clients' slots, so peers with no role that hold those
// keep no member from the window it must hold to answer the Prepare; a
// peer outside the group is refused before any work, and a server has
// one reply at a time.
func (s *Server) onServerWindowReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	if !s.groupPeer(from) {
		return 0, nil, errors.New("node: window requests on the epoch protocol only from the group's servers")
	}
	var q wire.WindowReq
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := s.enterServer(ctx, &s.windowSlots.servers, from); err != nil {
		return 0, nil, err
	}
	w := wire.Window{Items: s.windowItems(q.Number)}
	// A Prepare checked here but not yet taken: the servers asked
	// whether they would serve take its window from here. At most a
	// walk more, an item a number each.
	s.mu.Lock()
	var refs []walkRef
	if s.checked.number == q.Number {
		refs = s.checked.refs
	}
	s.mu.Unlock()
	for _, r := range refs {
		if !slices.ContainsFunc(w.Items, func(it wire.WindowItem) bool { return it.Epoch == r.Epoch && sameRecord(it.Closing, r.Digest) }) {
			w.Items = append(w.Items, s.servedItem(r, q.Number))
		}
	}
	return wire.TypeWindow, w.Marshal(), nil
}

// groupPeer reports whether p is a server of the group here: of a
// certified chain (certPeer), or a live roster server, not blamed, past
// its probation (eligible for a chain by the group's rules). A peer that
// only said hello as a server is neither.
func (s *Server) groupPeer(p peer.ID) bool {
	if p == s.h.ID() || s.certPeer(p) {
		return true
	}
	if s.roster.get(p) == nil || s.rb.serverExcluded(p) {
		return false
	}
	return s.who.check(s.h.ID(), p, s.lastNumber(), false) == nil
}

// certPeer reports whether p, not named by a round blame, is in a chain
// certified here: that of the last certificate kept (the group of the next
// number) or of the one before it, or the founders while those are the
// group (no certificate, or only number 1's).
func (s *Server) certPeer(p peer.ID) bool {
	if s.rb.serverExcluded(p) {
		return false
	}
	top := s.cert.certTop()
	for _, n := range []uint64{top + 1, top} {
		if n == 0 {
			continue
		}
		if g, ok := s.certGroup(n); ok && g[p] {
			return true
		}
	}
	return false
}

// windowItems is what this server serves of the window before epoch
// number: for each number below it, back BudgetLookback numbers, the
// epoch's descriptor without clients, closing record and pool. For a
// number whose Prepare it checked, exactly the items of the walk it
// checked (the walked descriptors, the pinned records and their pools),
// whatever the kinds of the certificates it keeps (a member that keeps
// a timeout of K and signed K+1's Prepare, whose previous certificate is
// K's abort, serves K); else the epochs its own certificates name, down
// to a number whose Prepare it checked, and that walk below it.
func (s *Server) windowItems(number uint64) []wire.WindowItem {
	if number < 2 {
		// Nothing lies below 1; and number − 1 of 0 wraps to 2^64 − 1,
		// where the loop's bound never holds: anyone's request for 0
		// would spin a core (TestWindowItemsZero).
		return nil
	}
	var out []wire.WindowItem
	for n := number - 1; n > 0 && n+BudgetLookback >= number; n-- {
		if refs, ok := s.walkOf(n + 1); ok {
			for _, r := range refs {
				if r.Number <= n && r.Number+BudgetLookback >= number {
					out = append(out, s.servedItem(r, number))
				}
			}
			break
		}
		cert, ok := s.cert.certOf(n)
		if !ok || (cert.Kind != wire.CertFinal && cert.Kind != wire.CertAbort) {
			continue
		}
		out = append(out, s.servedItem(walkRef{Number: n, Epoch: cert.Epoch}, number))
	}
	return out
}

// heldItems is what this server holds toward number's window, for its
// own checks (a leader's choice, a member's check of a Prepare): what it
// serves, and the epochs its own certificates name.
func (s *Server) heldItems(number uint64) []wire.WindowItem {
	out := s.windowItems(number)
	if _, ok := s.walkOf(number); !ok {
		return out
	}
	for n := number - 1; n > 0 && n+BudgetLookback >= number; n-- {
		if cert, ok := s.cert.certOf(n); ok && (cert.Kind == wire.CertFinal || cert.Kind == wire.CertAbort) {
			out = append(out, s.servedItem(walkRef{Number: n, Epoch: cert.Epoch}, number))
		}
	}
	return out
}

// The certified window (§6.3 v3). The leader of N pins N's window in its
// Prepare: the epochs walkWindow finds (the last DecoyEpochs final epochs
// of number at most N−2 with a record and pool), each with its record's
// digest. A member answers the Prepare only once it holds every pinned
// record and pool, from its own store or from the leader, and keeps them
// with the walked descriptors; it signs the open descriptor only if it
// pins the same. So when N opens, every honest server of N's chain can
// give a client the whole window, whoever the epochs' first servers gave
// their records to. A Prepare that leaves out a record N−1's descriptor
// pinned, while the window has room for it or pins an older epoch, is
// refused: it is the leader's signed choice, public in the Prepare.

// askWindow asks the peers other than this server, servers of the group,
// for the window before number over the epoch protocol (onServerWindowReq),
// at once, and returns what those that answered gave.
func (s *Server) askWindow(ctx context.Context, peers []peer.ID, number uint64) []wire.WindowItem {
	req := (&wire.WindowReq{Number: number}).Marshal()
	var (
		mu  sync.Mutex
		out []wire.WindowItem
		wg  sync.WaitGroup
	)
	for _, p := range peers {
		if p == s.h.ID() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := call(ctx, s.h, p, request{Proto: ProtoEpoch, Type: wire.TypeWindowReq, Body: req, Timeout: shortTimeout, Max: maxLookbackWindow})
			var w wire.Window
			if err != nil || w.Unmarshal(rep) != nil {
				return
			}
			mu.Lock()
			out = append(out, w.Items...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// The walk past a timeout (§6.3 v3). A timeout certificate names no
// epoch, so a walk that reached one stopped there, and the two numbers
// after a timeout pinned no epoch. The Prepare of N whose previous
// certificate is a timeout carries the Gap: the certificates of N−2,
// N−3, … down to the newest that names an epoch (final or abort), or to
// the window's look-back if all of them are timeouts. Every member checks
// each against the group certified for its number and refuses a Gap that
// stops short, skips a number or goes on past an epoch, so the walk past
// N−1's timeout reaches the same epochs it would have reached had N−1
// opened, for every client of N.

// The Gap holds at most a certificate a number of the look-back below N−1.
const _ = uint(wire.MaxGapCerts - (WindowLookback - 1))

// A server's window reply (windowItems, and the walk it checked) fits the
// wire's items.
const _ = uint(wire.MaxWindowItems - 2*BudgetLookback)

// keepWindow stores the parts of a walk's epochs that this server lacks:
// each item with a record under that record's digest, and as the epoch's
// own item where this server has none (not among the store's closing
// records, which mark an epoch whose rounds this server took whole: a
// server catches up an epoch until it holds its record, catchup.go).
func (s *Server) keepWindow(items []wire.WindowItem) {
	for _, it := range items {
		k := wire.WindowItem{Number: it.Number, Epoch: it.Epoch, Group: it.Group, Closing: it.Closing, Pool: it.Pool}
		var c wire.Closing
		if len(it.Closing) > 0 && c.Unmarshal(it.Closing, wire.MaxClosingRounds) == nil {
			key := itemKey(it.Epoch, closingDigest(&c))
			if _, ok := s.item(it.Number, key); !ok {
				s.putItem(key, k)
			}
		}
		own, ok := s.item(it.Number, itemKey(it.Epoch, [32]byte{}))
		if !ok || len(own.Group) == 0 || len(own.Closing) == 0 && len(it.Closing) > 0 {
			s.putItem(itemKey(it.Epoch, [32]byte{}), k)
		}
	}
}

// heldGroup returns the descriptor without clients of an epoch still in
// memory here (an aborted setup, or one whose record has not come).
func (s *Server) heldGroup(id [32]byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[id]
	if e == nil || e.v == nil {
		return nil
	}
	return groupBytes(e.v.Desc)
}
