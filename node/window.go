package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
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
	if err != nil || len(b)%72 != 0 || len(b)/72 > WindowLookback {
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
// no item holds it, from memory.
func (s *Server) servedItem(r walkRef) wire.WindowItem {
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
	if s.hookLackWindow() {
		it.Closing, it.Pool = nil, nil
	}
	return it
}

// onWindowReq answers a client's request for the window before an epoch
// number: for each number below it, back WindowLookback numbers, the
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
			w.Items = append(w.Items, s.servedItem(r))
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
// number: for each number below it, back WindowLookback numbers, the
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
	for n := number - 1; n > 0 && n+WindowLookback >= number; n-- {
		if refs, ok := s.walkOf(n + 1); ok {
			for _, r := range refs {
				if r.Number <= n && r.Number+WindowLookback >= number {
					out = append(out, s.servedItem(r))
				}
			}
			break
		}
		cert, ok := s.cert.certOf(n)
		if !ok || (cert.Kind != wire.CertFinal && cert.Kind != wire.CertAbort) {
			continue
		}
		out = append(out, s.servedItem(walkRef{Number: n, Epoch: cert.Epoch}))
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
	for n := number - 1; n > 0 && n+WindowLookback >= number; n-- {
		if cert, ok := s.cert.certOf(n); ok && (cert.Kind == wire.CertFinal || cert.Kind == wire.CertAbort) {
			out = append(out, s.servedItem(walkRef{Number: n, Epoch: cert.Epoch}))
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

// pinnedRefs returns the refs of a walk's window.
func pinnedRefs(w windowWalk) []wire.WindowRef {
	out := make([]wire.WindowRef, 0, len(w.Pools))
	for _, pe := range w.Pools {
		out = append(out, wire.WindowRef{Number: pe.Number, Epoch: pe.ID, Closing: closingDigest(w.Recs[pe.ID])})
	}
	return out
}

// leftOutCertified returns a ref of prev (the window N−1's descriptor
// pinned) that window, N's, leaves out although it still could hold it:
// window has fewer than DecoyEpochs epochs or pins an older one, and the
// ref is within N's look-back.
func leftOutCertified(number uint64, prev, window []wire.WindowRef) (wire.WindowRef, bool) {
	for _, r := range prev {
		if r.Number+WindowLookback < number || slices.Contains(window, r) {
			continue
		}
		if len(window) < DecoyEpochs || window[len(window)-1].Number < r.Number {
			return r, true
		}
	}
	return wire.WindowRef{}, false
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

// gapFor is the Gap of a Prepare of number whose previous certificate is
// prev, from the certificates kept here.
func (cs *certState) gapFor(number uint64, prev *wire.Cert) ([]wire.Cert, error) {
	if prev.Kind != wire.CertTimeout {
		return nil, nil
	}
	var out []wire.Cert
	for n := number - 2; n >= 1 && n+WindowLookback >= number; n-- {
		c, ok := cs.certOf(n)
		if !ok {
			return nil, fmt.Errorf("node: no certificate of epoch %d here for the gap of %d", n, number)
		}
		out = append(out, *c)
		if c.Kind != wire.CertTimeout {
			break
		}
	}
	return out, nil
}

// gapBytes encodes a Gap for comparison.
func gapBytes(gap []wire.Cert) []byte {
	var b []byte
	for i := range gap {
		b = append(b, gap[i].Marshal()...)
	}
	return b
}

// checkGapShape checks a Gap on its own: empty unless prev (the
// certificate of number−1) is a timeout; else the certificates of
// number−2 down, a number at a time, each a timeout but the last, which
// names an epoch or is of the look-back's last number (or 1).
func checkGapShape(number uint64, prev *wire.Cert, gap []wire.Cert) error {
	if prev.Kind != wire.CertTimeout {
		if len(gap) > 0 {
			return fmt.Errorf("node: a gap of %d certificates after a certificate of kind %d", len(gap), prev.Kind)
		}
		return nil
	}
	for i := range gap {
		c := &gap[i]
		if c.Kind == wire.CertNone || c.Number == 0 || c.Number+uint64(i)+2 != number || c.Number+WindowLookback < number {
			return fmt.Errorf("node: the gap of %d holds the certificate of %d at %d", number, c.Number, i)
		}
		if c.Kind != wire.CertTimeout && i != len(gap)-1 {
			return fmt.Errorf("node: the gap of %d goes on past epoch %d", number, c.Number)
		}
	}
	end := number - 1 // the number of the last certificate
	if len(gap) > 0 {
		if gap[len(gap)-1].Kind != wire.CertTimeout {
			return nil
		}
		end = gap[len(gap)-1].Number
	}
	if end > 1 && end-1+WindowLookback >= number {
		return fmt.Errorf("node: the gap of %d stops at %d, short of an epoch or the look-back", number, end)
	}
	return nil
}

// checkGap is a member's check of a Prepare's Gap: its shape, then each
// certificate, the oldest first, as the kept one or verified against the
// group certified for its number (checkCert) and then kept, as
// checkPrevious keeps the previous one. Never call with s.mu held.
func (s *Server) checkGap(number uint64, prev *wire.Cert, gap []wire.Cert) error {
	if err := checkGapShape(number, prev, gap); err != nil {
		return err
	}
	for i := len(gap) - 1; i >= 0; i-- {
		c := &gap[i]
		if mine, ok := s.cert.certOf(c.Number); ok && bytes.Equal(mine.Marshal(), c.Marshal()) {
			continue
		}
		if err := s.abortAfterFinal(c); err != nil {
			return fmt.Errorf("node: the gap's certificate of %d: %w", c.Number, err)
		}
		if err := s.checkCert(c); err != nil {
			return fmt.Errorf("node: the gap's certificate of %d: %w", c.Number, err)
		}
		s.addCert(c)
	}
	return nil
}

// checkWindowRefs checks a Prepare's window on its own: at most
// DecoyEpochs epochs, newest first, each of number at most N−2 and within
// the look-back.
func checkWindowRefs(number uint64, refs []wire.WindowRef) error {
	if len(refs) > DecoyEpochs {
		return fmt.Errorf("node: window of %d epochs", len(refs))
	}
	for i, r := range refs {
		if r.Number+2 > number || r.Number+WindowLookback < number || i > 0 && refs[i-1].Number <= r.Number {
			return fmt.Errorf("node: window pins epoch number %d for %d", r.Number, number)
		}
	}
	return nil
}

// chooseWindow is the leader's window for epoch number: from what this
// server holds, and if that is short of DecoyEpochs epochs or of a record
// N−1's descriptor pinned, from the chain's other servers too.
func (s *Server) chooseWindow(ctx context.Context, chain []peer.ID, number uint64, prev wire.Cert, gap []wire.Cert) []wire.WindowRef {
	if s.hookUnpinnedWindow() {
		return nil
	}
	d := &wire.Descriptor{Number: number, Previous: prev, Gap: gap}
	got := s.heldItems(number)
	short := func(refs []wire.WindowRef) bool {
		if len(refs) < DecoyEpochs {
			return true
		}
		gd := previousGroup(d, got)
		if gd == nil {
			return true
		}
		_, left := leftOutCertified(number, gd.Window, refs)
		return left
	}
	w := walkWindow(d, got)
	if short(pinnedRefs(w)) {
		got = append(got, s.askWindow(ctx, chain, number)...)
		w = walkWindow(d, got)
		// The leader holds what it pins, as every member does.
		s.keepWindow(w.Items)
	}
	return pinnedRefs(w)
}

// takeWindow holds the window a Prepare pins before this server answers
// it: every pinned record and pool, from this server's store or else the
// leader's, kept here with the walked descriptors. It returns the walk,
// which this server serves as the number's window once it takes the
// Prepare (keepWalk).
func (s *Server) takeWindow(leader peer.ID, p *wire.Prepare) ([]walkRef, error) {
	// Within the leader's wait for the answer.
	ctx, cancel := context.WithTimeout(s.ctx, shortTimeout/2)
	defer cancel()
	return s.holdWindow(ctx, leader, p, true)
}

// holdWindow checks that this server holds the window p pins, or gets
// what it lacks from src within ctx (none if src is empty), by the rules a
// Prepare's window is checked by (checkWindow).
func (s *Server) holdWindow(ctx context.Context, src peer.ID, p *wire.Prepare, keep bool) ([]walkRef, error) {
	if s.hookUnpinnedWindow() {
		return nil, nil
	}
	if err := checkWindowRefs(p.Number, p.Window); err != nil {
		return nil, err
	}
	if err := checkGapShape(p.Number, &p.Previous, p.Gap); err != nil {
		return nil, err
	}
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	got := s.heldItems(p.Number)
	if _, ok := resolveWindow(d, got); (!ok || previousGroup(d, got) == nil) && src != "" {
		got = append(got, s.askWindow(ctx, []peer.ID{src}, p.Number)...)
	}
	return s.checkWindow(p, got, src, keep)
}

// checkWindow checks the window p pins against the candidate items got
// (this server's and src's): every pinned epoch is reached by the walk
// back from p's certificates with its pinned record and that record's
// pool, and no record N−1's descriptor pinned is left out. With keep it
// stores what it walked (takeWindow), without it nothing (the would-serve
// question, whose Previous is unchecked); it returns the walk.
func (s *Server) checkWindow(p *wire.Prepare, got []wire.WindowItem, src peer.ID, keep bool) ([]walkRef, error) {
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	w, ok := resolveWindow(d, got)
	if !ok && src == "" {
		return nil, fmt.Errorf("node: %d epochs of the prepared window are not held here", w.Missing)
	}
	if !ok {
		return nil, fmt.Errorf("node: %d epochs of the prepared window are held neither here nor by %s", w.Missing, src.ShortString())
	}
	if gd := previousGroup(d, got); gd != nil {
		if r, left := leftOutCertified(p.Number, gd.Window, p.Window); left {
			return nil, fmt.Errorf("node: the prepared window leaves out epoch %d, pinned by the one before", r.Number)
		}
	}
	refs := walkRefs(w.Items)
	if keep {
		s.keepWindow(w.Items)
		s.mu.Lock()
		s.checked.number, s.checked.refs = p.Number, refs
		s.mu.Unlock()
	}
	return refs, nil
}

// windowLacks reports whether this server must fetch to check the window
// p pins as holdWindow would: it lacks a pinned epoch, or N−1's
// descriptor, whose pins N's window must keep. A window that breaks the
// rules on its own lacks nothing: holdWindow refuses it.
func (s *Server) windowLacks(p *wire.Prepare) bool {
	if s.hookUnpinnedWindow() || checkWindowRefs(p.Number, p.Window) != nil || checkGapShape(p.Number, &p.Previous, p.Gap) != nil {
		return false
	}
	d := &wire.Descriptor{Number: p.Number, Previous: p.Previous, Window: p.Window, Gap: p.Gap}
	got := s.heldItems(p.Number)
	_, ok := resolveWindow(d, got)
	return !ok || previousGroup(d, got) == nil
}

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
