//go:build riffletest

package client

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

// ownRule is the control's state in a client (clientHookState).
type ownRule struct {
	pool ownPool
	// pastViews are the chains of the epochs this client took part in.
	pastViews []*proto.View
	// seen: past epochs whose closing record was used.
	seen map[[32]byte]bool
	// closings are the records the index syncs brought (c.syncMu).
	closings     map[[32]byte]*wire.Closing
	closingOrder [][32]byte
	// others are the epochs whose records are asked of other servers
	// when the primary's log lacks them (c.mu).
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

// useOwnRule reports whether the control is on.
func (c *Client) useOwnRule() bool {
	o := c.cfg.Observe
	return o != nil && o.OwnDecoys
}

// hookOwnNote notes a checked list of the current epoch; c.mu held.
func (c *Client) hookOwnNote(rl *wire.RoundList) {
	if c.useOwnRule() {
		c.own.pool.note(rl)
	}
}

// hookOwnEnd ends epoch v in the control's pool and keeps its chain;
// c.mu held.
func (c *Client) hookOwnEnd(v *proto.View) {
	if !c.useOwnRule() || v == nil {
		return
	}
	c.own.pool.endEpoch()
	if !slices.ContainsFunc(c.own.pastViews, func(p *proto.View) bool { return p.ID == v.ID }) {
		c.own.pastViews = append(c.own.pastViews, v)
		if n := proto.DecoyEpochs + closeWaitMax + 1; len(c.own.pastViews) > n {
			c.own.pastViews = c.own.pastViews[len(c.own.pastViews)-n:]
		}
	}
}

// hookOwnWants computes, before an index sync, the past epochs whose
// records the control still wants and of them those to ask other servers
// for (all but the epoch just ended); c.mu held.
func (c *Client) hookOwnWants() {
	if !c.useOwnRule() {
		return
	}
	c.own.views, c.own.others = nil, nil
	for i, v := range c.own.pastViews {
		if c.own.seen[v.ID] && c.own.pool.closedEpoch(v.ID) {
			continue
		}
		c.own.views = append(c.own.views, v)
		if i < len(c.own.pastViews)-1 {
			c.own.others = append(c.own.others, v.ID)
		}
	}
}

// hookIndexClosing keeps a record an index page carried; c.syncMu held.
func (c *Client) hookIndexClosing(b []byte) {
	if !c.useOwnRule() {
		return
	}
	var rec wire.Closing
	if rec.Unmarshal(b, wire.MaxClosingRounds) != nil {
		return
	}
	if c.own.closings == nil {
		c.own.closings = map[[32]byte]*wire.Closing{}
	}
	if _, ok := c.own.closings[rec.Epoch]; ok {
		return
	}
	c.own.closings[rec.Epoch] = &rec
	c.own.closingOrder = append(c.own.closingOrder, rec.Epoch)
	for len(c.own.closingOrder) > 64 {
		delete(c.own.closings, c.own.closingOrder[0])
		c.own.closingOrder = c.own.closingOrder[1:]
	}
}

// hookOwnFallback reports whether the control turns to another server for
// records its primary's log lacks; c.syncMu held.
func (c *Client) hookOwnFallback() bool {
	if !c.useOwnRule() || c.hookNoClosingFill() {
		return false
	}
	c.mu.Lock()
	others := c.own.others
	c.mu.Unlock()
	for _, id := range others {
		if c.own.closings[id] == nil {
			return true
		}
	}
	return false
}

// hookOwnUse admits to the control's pool the epochs whose records the
// index syncs brought, checked against their chains.
func (c *Client) hookOwnUse() {
	if !c.useOwnRule() {
		return
	}
	c.mu.Lock()
	views := c.own.views
	c.mu.Unlock()
	recs := map[[32]byte]*wire.Closing{}
	c.syncMu.Lock()
	for _, v := range views {
		rec := c.own.closings[v.ID]
		if rec == nil {
			continue
		}
		if proto.CheckClosing(v, rec) != nil {
			delete(c.own.closings, v.ID)
			continue
		}
		recs[v.ID] = rec
	}
	c.syncMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own.seen == nil {
		c.own.seen = map[[32]byte]bool{}
	}
	for id, rec := range recs {
		c.own.pool.admit(rec)
		c.own.seen[id] = true
	}
}

// ownDraw is the control's draw, or nil; c.mu held.
func (c *Client) ownDraw() func(io.Reader) ([32]byte, bool) {
	if c.useOwnRule() {
		return c.own.pool.draw
	}
	return nil
}
