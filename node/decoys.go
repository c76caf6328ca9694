package node

import (
	"encoding/binary"
	"io"

	"github.com/riffle-net/riffle/internal/wire"
)

// Decoys (docs/protocol.md §6.3 v3). Each request slot that a round leaves
// empty carries, with probability ρ, an id drawn uniformly from the public
// demand of the last E_d epochs: the ids of the request lists that every
// client of those epochs received and checked against all m signatures,
// each id counted once per epoch. The draw never looks at what the client
// holds, wants or failed to fetch, so it is no fingerprint; a chunk whose
// answer failed is never asked for on purpose, only when a draw lands on
// it.
const (
	// DecoyRateNum / DecoyRateDen is ρ = ½, a constant of every group:
	// the least rate at which a failed chunk's later draw hides among
	// decoys. It costs the servers up to n·k/2 more rows a round.
	DecoyRateNum, DecoyRateDen = 1, 2
	// DecoyEpochs is E_d: the epochs whose request lists make the pool.
	DecoyEpochs = 4
)

// decoyPool is the public demand a client draws decoys from. The lists
// are public and the same for every client of an epoch.
type decoyPool struct {
	epochs [][][32]byte // distinct requested ids of each completed epoch, oldest first
	cur    map[[32]byte]bool
	curIDs [][32]byte
	size   int // total ids over epochs
}

// note records the ids of a checked request list of the current epoch.
func (p *decoyPool) note(rl *wire.RoundList) {
	if p.cur == nil {
		p.cur = map[[32]byte]bool{}
	}
	for _, le := range rl.Entries {
		if !p.cur[le.ID] {
			p.cur[le.ID] = true
			p.curIDs = append(p.curIDs, le.ID)
		}
	}
}

// endEpoch moves the current epoch's ids into the pool, dropping epochs
// older than DecoyEpochs.
func (p *decoyPool) endEpoch() {
	p.epochs = append(p.epochs, p.curIDs)
	p.size += len(p.curIDs)
	for len(p.epochs) > DecoyEpochs {
		p.size -= len(p.epochs[0])
		p.epochs = p.epochs[1:]
	}
	p.cur, p.curIDs = nil, nil
}

// at returns the i-th id of the pool (0 ≤ i < size).
func (p *decoyPool) at(i int) [32]byte {
	for _, ids := range p.epochs {
		if i < len(ids) {
			return ids[i]
		}
		i -= len(ids)
	}
	panic("node: decoy index out of range")
}

// draw returns a decoy for one empty request slot, or false: a coin of
// probability ρ, then an id uniform over the pool. What it reads from rnd
// depends only on the pool.
func (p *decoyPool) draw(rnd io.Reader) ([32]byte, bool) {
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
		if o := c.cfg.observe; o != nil && o.HeldDecoys {
			draw = c.heldDraw
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

// heldDraw is the decoy draw of v2, kept for the anonymity tests' negative
// control only (testClientObserver.HeldDecoys): the coin of ρ, then a chunk
// the client published or fetched. Call with c.mu held.
func (c *Client) heldDraw(rnd io.Reader) ([32]byte, bool) {
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil || binary.BigEndian.Uint64(b[:])%DecoyRateDen >= DecoyRateNum || len(c.testHeld) == 0 {
		return [32]byte{}, false
	}
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	return c.testHeld[binary.BigEndian.Uint64(b[:])%uint64(len(c.testHeld))], true
}

// noteHeldForTest records a chunk for heldDraw; call with c.mu held.
func (c *Client) noteHeldForTest(id [32]byte) {
	if o := c.cfg.observe; o != nil && o.HeldDecoys {
		c.testHeld = append(c.testHeld, id)
	}
}
