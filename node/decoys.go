package node

import (
	"encoding/binary"
	"io"

	"github.com/riffle-net/riffle/internal/wire"
)

// Decoys (docs/protocol.md §6.3 v3). Each request slot that a round leaves
// empty carries, with probability ρ, an id drawn from the group's public
// demand of the window's E_d epochs (window.go): the (output position,
// requested id) pairs of their published lists, each pair counted once
// per epoch, as the epochs' closing records fix them.
// An id that many pseudonyms asked for weighs more than one that a single
// pseudonym asked for in every round: decoys follow demand, and no
// pseudonym can weigh them by asking again. The draw never looks at what
// the client holds, wants or failed to fetch, so it is no fingerprint; a
// chunk whose answer failed is never asked for on purpose, only when a
// draw lands on it.
const (
	// DecoyRateNum / DecoyRateDen is ρ = ½, a constant of every group:
	// the least rate at which a failed chunk's later draw hides among
	// decoys. It costs the servers up to n·k/2 more rows a round.
	DecoyRateNum, DecoyRateDen = 1, 2
	// DecoyEpochs is E_d: the epochs whose request lists make the pool.
	DecoyEpochs = 4
)

// poolEpoch is one epoch of the window, checked against its record.
type poolEpoch struct {
	number uint64
	id     [32]byte
	total  uint32
	sample []wire.PoolPair
}

// decoyPool is the window a client draws from: the same for every client
// of an epoch, whatever its history (window_client.go).
type decoyPool struct {
	epochs []*poolEpoch // newest first
	weight uint64       // Σ total over epochs with a sample
}

func (p *decoyPool) set(eps []*poolEpoch) {
	p.epochs, p.weight = eps, 0
	for _, e := range eps {
		if len(e.sample) > 0 {
			p.weight += uint64(e.total)
		}
	}
}

// draw returns a decoy for one empty request slot, or false: a coin of
// probability ρ, then an epoch with weight its pairs and a pair uniform
// over its sample (the sample is uniform over the epoch's pairs, so each
// pair of the window weighs the same). What it reads from rnd depends
// only on the pool.
func (p *decoyPool) draw(rnd io.Reader) ([32]byte, bool) {
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	if binary.BigEndian.Uint64(b[:])%DecoyRateDen >= DecoyRateNum || p.weight == 0 {
		return [32]byte{}, false
	}
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	x := binary.BigEndian.Uint64(b[:]) % p.weight
	for _, e := range p.epochs {
		if len(e.sample) == 0 {
			continue
		}
		if x >= uint64(e.total) {
			x -= uint64(e.total)
			continue
		}
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return [32]byte{}, false
		}
		return e.sample[binary.BigEndian.Uint64(b[:])%uint64(len(e.sample))].ID, true
	}
	return [32]byte{}, false
}

// decoyPair is one (output position, requested id) pair of an epoch.
type decoyPair struct {
	pos uint32
	id  [32]byte
}

// decoyEpoch is the public demand of one epoch, as its lists gave it.
type decoyEpoch struct {
	id     [32]byte
	seen   map[decoyPair]bool
	pairs  []decoyPair          // distinct, in the order first seen
	rounds map[uint32][32]byte  // round → digest of its list
	from   map[decoyPair]uint32 // pair → the first round that listed it
	closed bool                 // admitted by its closing record
}

// ownPool is the old rule, kept for the anonymity tests' positive
// controls only (testClientObserver.OwnDecoys): the demand of the lists
// this client received itself, of the epochs it attended.
type ownPool struct {
	ended []*decoyEpoch // the last DecoyEpochs ended epochs, oldest first
	cur   *decoyEpoch
	size  int // pairs over the admitted epochs
}

// note records the pairs of a checked request list of the current epoch.
func (p *ownPool) note(rl *wire.RoundList) {
	if p.cur == nil || p.cur.id != rl.Epoch {
		p.cur = &decoyEpoch{id: rl.Epoch, seen: map[decoyPair]bool{}, rounds: map[uint32][32]byte{}, from: map[decoyPair]uint32{}}
	}
	e := p.cur
	e.rounds[rl.Round] = listDigest(rl)
	for i, x := range rl.Pairs {
		k := decoyPair{pos: x.Pos, id: rl.PairID(i)}
		if !e.seen[k] {
			e.seen[k] = true
			e.pairs = append(e.pairs, k)
			e.from[k] = rl.Round
		}
	}
}

// endEpoch moves the current epoch's pairs among the ended epochs,
// dropping epochs older than DecoyEpochs.
func (p *ownPool) endEpoch() {
	if p.cur == nil {
		return
	}
	p.ended = append(p.ended, p.cur)
	p.cur = nil
	if len(p.ended) > DecoyEpochs {
		p.ended = p.ended[len(p.ended)-DecoyEpochs:]
	}
	p.resize()
}

// resize counts the pairs that draws take from.
func (p *ownPool) resize() {
	p.size = 0
	for _, e := range p.ended {
		if p.usable(e) {
			p.size += len(e.pairs)
		}
	}
}

// usable reports whether draws take from ended epoch e: only once its
// closing record, signed by all m servers, came (§6.3 v3), so that every
// client of the epoch draws from the same rounds.
func (p *ownPool) usable(e *decoyEpoch) bool { return e.closed }

// admit takes an epoch's pairs into the draws on its closing record
// (checked by the caller): only the pairs of rounds that the record shows
// published with the very list this client checked.
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

// closedEpoch reports whether epoch id's pairs were admitted, or the
// epoch left the window (nothing more to want for it).
func (p *ownPool) closedEpoch(id [32]byte) bool {
	for _, e := range p.ended {
		if e.id == id {
			return e.closed
		}
	}
	return true
}

// at returns the i-th id of the pool (0 ≤ i < size).
func (p *ownPool) at(i int) [32]byte {
	for _, e := range p.ended {
		if !p.usable(e) {
			continue
		}
		if i < len(e.pairs) {
			return e.pairs[i].id
		}
		i -= len(e.pairs)
	}
	panic("node: decoy index out of range")
}

// draw is the old rule's draw: a coin of probability ρ, then an id
// uniform over the pool.
func (p *ownPool) draw(rnd io.Reader) ([32]byte, bool) {
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	if binary.BigEndian.Uint64(b[:])%DecoyRateDen >= DecoyRateNum || p.size == 0 {
		return [32]byte{}, false
	}
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	// A 64-bit draw modulo a pool of at most 2^28 ids: the bias is below
	// 2^-36.
	return p.at(int(binary.BigEndian.Uint64(b[:]) % uint64(p.size))), true
}

// backgroundRequests fills the empty slots of a round's k requests with
// decoys; a draw that lands on an id already requested this round leaves
// its slot to a cover row. Call with c.mu held.
func (c *Client) backgroundRequests(reqs [][32]byte, k int) [][32]byte {
	used := map[[32]byte]bool{}
	for _, id := range reqs {
		used[id] = true
	}
	for slot := len(reqs); slot < k; slot++ {
		draw := c.decoys.draw
		if d := c.hookHeldDraw(); d != nil {
			draw = d
		}
		id, ok := draw(c.rand)
		if !ok || used[id] {
			continue
		}
		used[id] = true
		reqs = append(reqs, id)
	}
	return reqs
}

// wanted reports whether a get job needs data chunk id; call with c.mu
// held.
func (c *Client) wanted(id [32]byte) bool {
	for _, g := range c.wants {
		if g.asm != nil && g.needs(id) {
			return true
		}
	}
	return false
}
