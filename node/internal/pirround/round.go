// Package pirround is a primary's PIR state of one round (docs/protocol.md
// §6.3): its own clients' masks, the other chain servers' padded answers
// XORed together as they come, its own part, and the combined answers its
// clients get, and the check of the padded answers before they are taken
// (CheckPads). It does no I/O and takes no lock: package pirserve's
// Rounds guards a Round under its own, and computes the parts and sends
// them.
package pirround

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/riffle-net/riffle/pir"
)

// Round is one round's PIR state at a primary.
type Round struct {
	Queries map[uint32][][]byte // this server's clients' masks
	Pads    map[uint32][][]byte // XOR of the padded answers received
	PadFrom map[int]bool
	Own     map[uint32][][]byte // R_p for this server's clients
	Answers map[uint32][][]byte // combined answers, ready for the client
	Done    bool
	// PadBodies are the frames (BufPool buffers) Pads alias, given back
	// once the answers are combined.
	PadBodies [][]byte
}

// New returns a round with nothing in.
func New() Round {
	return Round{Queries: map[uint32][][]byte{}, Pads: map[uint32][][]byte{}, PadFrom: map[int]bool{}, Answers: map[uint32][][]byte{}}
}

// Drop drops the masks, parts and answers (the round is over here); the
// frames in PadBodies are the caller's to give back first.
func (p *Round) Drop() {
	p.PadBodies = nil
	p.Queries = map[uint32][][]byte{}
	p.Pads, p.Own, p.Answers, p.PadFrom = map[uint32][][]byte{}, nil, map[uint32][][]byte{}, map[int]bool{}
}

// DropPads drops the padded answers (nothing more is combined), keeping
// the masks and answers for the requests in flight.
func (p *Round) DropPads() {
	p.PadBodies = nil
	p.Pads = map[uint32][][]byte{}
}

// Query records slot sl's masks, the same on a resend: fresh is false for
// a resend, and masks that differ from the slot's first are refused.
func (p *Round) Query(sl uint32, masks [][]byte) (fresh bool, err error) {
	if old, ok := p.Queries[sl]; ok {
		same := true
		for t := range old {
			same = same && bytes.Equal(old[t], masks[t])
		}
		if !same {
			return false, errors.New("node: a different query was already sent for this slot and round")
		}
		return false, nil
	}
	p.Queries[sl] = masks
	return true, nil
}

// AddPads takes chain server j's padded answers, k rows a slot in the
// order of slots, held in body: the first server's are kept (Pads alias
// body), the others' XORed into them. added is false for a repeat of j's
// or once the answers are combined. free is body when nothing refers to
// it any more, to be given back; nil when PadBodies holds it.
func (p *Round) AddPads(j int, slots []uint32, rows [][]byte, k int, body []byte) (free []byte, added bool) {
	if p.PadFrom[j] || p.Done {
		return body, false // nothing refers to it
	}
	p.PadFrom[j] = true
	kept := false
	for i, sl := range slots {
		acc := p.Pads[sl]
		if acc == nil {
			p.Pads[sl] = rows[i*k : (i+1)*k]
			kept = true
			continue
		}
		for t := 0; t < k; t++ {
			pir.XorInto(acc[t], rows[i*k+t])
		}
	}
	if kept {
		p.PadBodies = append(p.PadBodies, body)
		return nil, true
	}
	return body, true // XORed into the first server's, which stays
}

// Combine finishes the answers whose own part and m−1 padded parts are
// in (§6.3); ok is false while parts are missing. fresh are the answers
// it combined now (already in Answers), free the padded frames, XORed
// into them, to be given back.
func (p *Round) Combine(m int) (fresh map[uint32][][]byte, free [][]byte, ok bool) {
	if p.Own == nil || len(p.PadFrom) < m-1 {
		return nil, nil, false
	}
	fresh = map[uint32][][]byte{}
	for sl, own := range p.Own {
		if _, done := p.Answers[sl]; done {
			continue
		}
		if pads := p.Pads[sl]; pads != nil {
			for t := range own {
				pir.XorInto(own[t], pads[t])
			}
		}
		fresh[sl] = own
		p.Answers[sl] = own
	}
	p.Done = true
	free = p.PadBodies
	p.Pads, p.PadBodies = map[uint32][][]byte{}, nil
	return fresh, free, true
}

// CheckPads checks the padded answers another chain server sends this
// primary (§6.3) before they are taken: one set for each of its own
// clients' slots mine, in order, each row of b bytes.
func CheckPads(slots []uint32, rows [][]byte, mine []uint32, b int) error {
	if len(slots) != len(mine) {
		return fmt.Errorf("node: padded answers for %d slots, this primary serves %d", len(slots), len(mine))
	}
	for i, sl := range slots {
		if sl != mine[i] {
			return errors.New("node: padded answers for slots of another primary")
		}
	}
	for _, row := range rows {
		if len(row) != b {
			return fmt.Errorf("node: padded answer of %d bytes, want %d", len(row), b)
		}
	}
	return nil
}
