//go:build riffletest

package hooks

import (
	"encoding/binary"
	"io"
	"slices"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The old decoy rule (before the group's window, issue 26), kept only as
// the anonymity tests' positive control (ClientObserver.OwnDecoys):
// decoys come from the lists this client received itself, of the epochs it
// attended, admitted as their closing records reach it through its index
// syncs; a record the primary lacks for an epoch the client attended is
// asked of other servers. Every input is the client's own history, which
// is what the controls show an adversary can read. The binary has none of
// it (hooks.go).

// ownRule is the control's state in a client (Hooks.mu).
type ownRule struct {
	pool ownPool
	// pastViews are the chains of the epochs this client took part in.
	pastViews []*proto.View
	// seen: past epochs whose closing record was used.
	seen map[[32]byte]bool
	// closings are the records the index syncs brought.
	closings     map[[32]byte]*wire.Closing
	closingOrder [][32]byte
	// others are the epochs whose records are asked of other servers
	// when the primary's log lacks them.
	views  []*proto.View
	others [][32]byte
}

// decoyPair is one (output position, requested id) pair of an epoch.
type decoyPair struct {
	pos uint32
	id  [32]byte
}

// decoyEpoch is the demand of one epoch, as its lists gave this client.
type decoyEpoch struct {
	id     [32]byte
	seen   map[decoyPair]bool
	pairs  []decoyPair          // distinct, in the order first seen
	rounds map[uint32][32]byte  // round → digest of its list
	from   map[decoyPair]uint32 // pair → the first round that listed it
	closed bool                 // admitted by its closing record
}

// ownPool: the demand of the lists this client received itself.
type ownPool struct {
	ended []*decoyEpoch // the last DecoyEpochs ended epochs, oldest first
	cur   *decoyEpoch
	size  int // pairs over the admitted epochs
}

func (p *ownPool) note(rl *wire.RoundList) {
	if p.cur == nil || p.cur.id != rl.Epoch {
		p.cur = &decoyEpoch{id: rl.Epoch, seen: map[decoyPair]bool{}, rounds: map[uint32][32]byte{}, from: map[decoyPair]uint32{}}
	}
	e := p.cur
	e.rounds[rl.Round] = proto.ListDigest(rl)
	for i, x := range rl.Pairs {
		k := decoyPair{pos: x.Pos, id: rl.PairID(i)}
		if !e.seen[k] {
			e.seen[k] = true
			e.pairs = append(e.pairs, k)
			e.from[k] = rl.Round
		}
	}
}

func (p *ownPool) endEpoch() {
	if p.cur == nil {
		return
	}
	p.ended = append(p.ended, p.cur)
	p.cur = nil
	if len(p.ended) > proto.DecoyEpochs {
		p.ended = p.ended[len(p.ended)-proto.DecoyEpochs:]
	}
	p.resize()
}

func (p *ownPool) resize() {
	p.size = 0
	for _, e := range p.ended {
		if e.closed {
			p.size += len(e.pairs)
		}
	}
}

// admit takes an epoch's pairs into the draws on its closing record: only
// the pairs of rounds that the record shows published with the list this
// client checked.
func (p *ownPool) admit(rec *wire.Closing) {
	for _, e := range p.ended {
		if e.id != rec.Epoch || e.closed {
			continue
		}
		kept := e.pairs[:0]
		for _, k := range e.pairs {
			r := e.from[k]
			if int(r) < len(rec.Rounds) && rec.Rounds[r].State == wire.ClosedPublished && rec.Rounds[r].List == e.rounds[r] {
				kept = append(kept, k)
			}
		}
		e.pairs, e.closed = kept, true
		e.seen, e.from = nil, nil
	}
	p.resize()
}

// closedEpoch reports whether epoch id's pairs were admitted, or the epoch
// left the pool.
func (p *ownPool) closedEpoch(id [32]byte) bool {
	for _, e := range p.ended {
		if e.id == id {
			return e.closed
		}
	}
	return true
}

func (p *ownPool) at(i int) [32]byte {
	for _, e := range p.ended {
		if !e.closed {
			continue
		}
		if i < len(e.pairs) {
			return e.pairs[i].id
		}
		i -= len(e.pairs)
	}
	panic("node: decoy index out of range")
}

// draw: a coin of probability ρ, then an id uniform over the pool.
func (p *ownPool) draw(rnd io.Reader) ([32]byte, bool) {
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	if binary.BigEndian.Uint64(b[:])%proto.DecoyRateDen >= proto.DecoyRateNum || p.size == 0 {
		return [32]byte{}, false
	}
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	return p.at(int(binary.BigEndian.Uint64(b[:]) % uint64(p.size))), true
}

// OwnNote notes a checked list of the current epoch.
func OwnNote(h *Hooks, rl *wire.RoundList) {
	if OwnRule(h) {
		h.mu.Lock()
		h.own.pool.note(rl)
		h.mu.Unlock()
	}
}

// OwnEnd ends epoch v in the control's pool and keeps its chain, and
// the chains of the last keep epochs.
func OwnEnd(h *Hooks, v *proto.View, keep int) {
	if !OwnRule(h) || v == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.own.pool.endEpoch()
	if !slices.ContainsFunc(h.own.pastViews, func(p *proto.View) bool { return p.ID == v.ID }) {
		h.own.pastViews = append(h.own.pastViews, v)
		if len(h.own.pastViews) > keep {
			h.own.pastViews = h.own.pastViews[len(h.own.pastViews)-keep:]
		}
	}
}

// OwnWants computes, before an index sync, the past epochs whose records
// the control still wants and of them those to ask other servers for
// (all but the epoch just ended).
func OwnWants(h *Hooks) {
	if !OwnRule(h) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.own.views, h.own.others = nil, nil
	for i, v := range h.own.pastViews {
		if h.own.seen[v.ID] && h.own.pool.closedEpoch(v.ID) {
			continue
		}
		h.own.views = append(h.own.views, v)
		if i < len(h.own.pastViews)-1 {
			h.own.others = append(h.own.others, v.ID)
		}
	}
}

// IndexClosing keeps a record an index page carried.
func IndexClosing(h *Hooks, b []byte) {
	if !OwnRule(h) {
		return
	}
	var rec wire.Closing
	if rec.Unmarshal(b, wire.MaxClosingRounds) != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.own.closings == nil {
		h.own.closings = map[[32]byte]*wire.Closing{}
	}
	if _, ok := h.own.closings[rec.Epoch]; ok {
		return
	}
	h.own.closings[rec.Epoch] = &rec
	h.own.closingOrder = append(h.own.closingOrder, rec.Epoch)
	for len(h.own.closingOrder) > 64 {
		delete(h.own.closings, h.own.closingOrder[0])
		h.own.closingOrder = h.own.closingOrder[1:]
	}
}

// OwnFallback reports whether the control turns to another server for
// records its primary's log lacks.
func OwnFallback(h *Hooks) bool {
	if !OwnRule(h) || h.noClosingFill() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range h.own.others {
		if h.own.closings[id] == nil {
			return true
		}
	}
	return false
}

// OwnUse admits to the control's pool the epochs whose records the index
// syncs brought, checked against their chains.
func OwnUse(h *Hooks) {
	if !OwnRule(h) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.own.seen == nil {
		h.own.seen = map[[32]byte]bool{}
	}
	for _, v := range h.own.views {
		rec := h.own.closings[v.ID]
		if rec == nil {
			continue
		}
		if proto.CheckClosing(v, rec) != nil {
			delete(h.own.closings, v.ID)
			continue
		}
		h.own.pool.admit(rec)
		h.own.seen[v.ID] = true
	}
}

// ownDraw is the control's draw, or nil.
func (h *Hooks) ownDraw() func(io.Reader) ([32]byte, bool) {
	if !OwnRule(h) {
		return nil
	}
	return func(rnd io.Reader) ([32]byte, bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.own.pool.draw(rnd)
	}
}
