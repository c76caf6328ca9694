package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/pir"
)

// decoyOneIn sets the background rate of re-requests (§6.3): each request
// slot that a round leaves empty carries, with probability 1/decoyOneIn, a
// re-request of a chunk the client already holds, or of one whose answer
// was corrupted in an earlier epoch. Every client draws the same way
// whatever it does, so a re-request after a corrupted answer is one of a
// stream that never stops. The rate costs the servers about n·k/decoyOneIn
// more rows a round.
const decoyOneIn = 16

// maxHeld bounds the ids a client remembers for its re-requests.
const maxHeld = 4096

// noteHeld remembers a chunk the client holds; call with c.mu held.
func (c *Client) noteHeld(id [32]byte) {
	if len(c.held) >= maxHeld {
		for old := range c.held { // map order: an arbitrary one goes
			delete(c.held, old)
			break
		}
	}
	c.held[id] = true
}

// backgroundRequests fills the empty slots of a round's k requests from
// the background stream; call with c.mu held.
func (c *Client) backgroundRequests(reqs [][32]byte, k int) [][32]byte {
	used := map[[32]byte]bool{}
	for _, id := range reqs {
		used[id] = true
	}
	for slot := len(reqs); slot < k; slot++ {
		var coin [2]byte
		if _, err := io.ReadFull(c.rand, coin[:]); err != nil || binary.BigEndian.Uint16(coin[:])%decoyOneIn != 0 {
			continue
		}
		id, ok := c.pickRerequest(used)
		if !ok {
			continue
		}
		used[id] = true
		reqs = append(reqs, id)
	}
	return reqs
}

// pickRerequest takes a retry id if there is one, else a random held
// chunk not in used; call with c.mu held.
func (c *Client) pickRerequest(used map[[32]byte]bool) ([32]byte, bool) {
	for id := range c.retry {
		if !used[id] && !c.inflight[id] {
			delete(c.retry, id)
			return id, true
		}
	}
	var cands [][32]byte
	for id := range c.held {
		if !used[id] && !c.inflight[id] {
			cands = append(cands, id)
		}
	}
	if len(cands) == 0 {
		return [32]byte{}, false
	}
	var r [4]byte
	if _, err := io.ReadFull(c.rand, r[:]); err != nil {
		return [32]byte{}, false
	}
	return cands[binary.BigEndian.Uint32(r[:])%uint32(len(cands))], true
}

// neededIDs returns up to n ids that get jobs need and that are neither in
// flight nor failed in this epoch; call with c.mu held.
func (c *Client) neededIDs(n int) [][32]byte {
	var out [][32]byte
	seen := map[[32]byte]bool{}
	for _, g := range c.wants {
		if len(out) >= n {
			break
		}
		if g.asm == nil {
			continue
		}
		for _, id := range g.asm.Needed() {
			if len(out) >= n {
				break
			}
			if !c.inflight[id] && !c.failed[id] && !c.retry[id] && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// query sends the k masks of round r and checks the k answers (§6.1, §6.3).
func (c *Client) query(ctx context.Context, e *cepoch, r uint32, rl *wire.RoundList) error {
	_, k := int(e.v.desc.Params.ChunkSize), int(e.v.desc.Params.K)
	L := max(1, len(rl.Entries))
	c.mu.Lock()
	reqs := e.reqs[r]
	delete(e.reqs, r)
	c.mu.Unlock()
	rows := make([]int, k)
	q := wire.Rows{Epoch: e.v.id, Round: r, Slots: []uint32{e.slot}}
	for t := 0; t < k; t++ {
		rows[t] = -1
		if t < len(reqs) {
			for i, le := range rl.Entries {
				if le.ID == reqs[t] {
					rows[t] = i
				}
			}
		}
		if rows[t] < 0 {
			cr, err := pir.CoverRow(c.rand, L)
			if err != nil {
				return err
			}
			rows[t] = cr
		}
		mk, err := pir.Query(e.others, uint64(r), uint32(t), L, rows[t])
		if err != nil {
			return err
		}
		q.Rows = append(q.Rows, mk)
	}
	// The answer's buffer goes back to the epoch's free list when this
	// round is done with it: delivered chunks are written out or decoded
	// into copies, never kept.
	var buf []byte
	alloc := func(n int) []byte {
		select {
		case buf = <-e.answerBufs:
		default:
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		return buf[:n]
	}
	defer func() {
		if buf != nil {
			select {
			case e.answerBufs <- buf:
			default:
			}
		}
	}()
	rep, err := c.call(ctx, request{Proto: ProtoPIR, Type: wire.TypeQuery, Body: q.Marshal(), Timeout: pollTimeout,
		Max: 64 + k*(8+int(e.v.desc.Params.ChunkSize)), Alloc: alloc})
	c.mu.Lock()
	for _, id := range reqs {
		delete(c.inflight, id)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	var ans wire.Rows
	if err := ans.Unmarshal(rep, 1, k, int(e.v.desc.Params.ChunkSize)); err != nil {
		return err
	}
	for t := 0; t < k; t++ {
		row := ans.Rows[t]
		if len(row) != int(e.v.desc.Params.ChunkSize) {
			return fmt.Errorf("node: answer of %d bytes", len(row))
		}
		pir.Unpad(e.others, uint64(r), uint32(t), row)
		if len(rl.Entries) == 0 {
			continue
		}
		le := rl.Entries[rows[t]]
		// The whole row of every answer, real or cover (§6.3 v2).
		if err := pir.CheckRow(row, le.ID, int(le.Len)); err != nil {
			c.mu.Lock()
			c.stats.BadAnswers++
			if t < len(reqs) && reqs[t] == le.ID {
				c.failed[le.ID] = true
			}
			c.mu.Unlock()
			c.progress("warning: a server corrupted a PIR answer in round %d (nothing is reported; the chunk is asked again in a later epoch)", r)
			continue
		}
		if t < len(reqs) && reqs[t] == le.ID {
			c.deliver(le.ID, row[:le.Len])
		}
	}
	return nil
}

// deliver hands a fetched chunk to the get jobs that need it.
func (c *Client) deliver(id [32]byte, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Fetched++
	c.noteHeld(id)
	if g := c.wants[id]; g != nil && g.root {
		delete(c.wants, id)
		asm, err := chunker.NewAssembler(g.dir, g.link, data, chunker.AssembleOptions{Log: c.log})
		if err != nil {
			g.err = err
			close(g.done)
			c.notify()
			return
		}
		g.asm, g.root = asm, false
		c.wants[id] = g // keyed by file id from now on
		c.checkDone(id, g)
		return
	}
	for fid, g := range c.wants {
		if g.asm == nil {
			continue
		}
		if err := g.asm.Add(chunker.ID(id), data); err == nil {
			c.checkDone(fid, g)
		}
	}
}

func (c *Client) checkDone(fid [32]byte, g *getJob) {
	if len(g.asm.Needed()) != 0 {
		return
	}
	g.path, g.err = g.asm.Finish()
	delete(c.wants, fid)
	close(g.done)
	c.notify()
}
