package client

import (
	"encoding/binary"
	"io"

	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
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

// decoyPool is the window a client draws from: the same for every client
// of an epoch, whatever its history (window_client.go).
type decoyPool struct {
	epochs []*proto.PoolEpoch // newest first
	weight uint64             // Σ total over epochs with a sample
}

func (p *decoyPool) set(eps []*proto.PoolEpoch) {
	p.epochs, p.weight = eps, 0
	for _, e := range eps {
		if len(e.Sample) > 0 {
			p.weight += uint64(e.Total)
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
	if binary.BigEndian.Uint64(b[:])%proto.DecoyRateDen >= proto.DecoyRateNum || p.weight == 0 {
		return [32]byte{}, false
	}
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	x := binary.BigEndian.Uint64(b[:]) % p.weight
	for _, e := range p.epochs {
		if len(e.Sample) == 0 {
			continue
		}
		if x >= uint64(e.Total) {
			x -= uint64(e.Total)
			continue
		}
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return [32]byte{}, false
		}
		return e.Sample[binary.BigEndian.Uint64(b[:])%uint64(len(e.Sample))].ID, true
	}
	return [32]byte{}, false
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
		if d := hooks.HeldDraw(&c.hk); d != nil {
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

// wanted reports whether a get job needs data chunk id.
func (q *queue) wanted(id [32]byte) bool {
	for _, g := range q.wants {
		if g.asm != nil && g.needs(id) {
			return true
		}
	}
	return false
}
