package client

import (
	"context"
	"fmt"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
)

// neededIDsIn returns up to n data chunk ids that get jobs need and that
// were not requested yet in epoch id (in flight, answered or failed: an
// id is requested at most once an epoch, so that what a client requests
// never depends on the epoch's answers, §6.4 v3): a job past its
// allowance of epochs asks for nothing (paused, presence.go), and a job
// that asks counts the epoch.
func (q *queue) neededIDsIn(epoch [32]byte, n int) [][32]byte {
	var out [][32]byte
	seen := map[[32]byte]bool{}
	for _, g := range q.wants {
		if len(out) >= n {
			break
		}
		if g.asm == nil || len(g.needed) == 0 || !g.ep.may(epoch) {
			continue
		}
		before := len(out)
		for _, id := range g.needed {
			if len(out) >= n {
				break
			}
			if !q.inflight[id] && !q.failed[id] && !q.retry[id] && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
		if len(out) > before {
			g.ep.sent(epoch)
		}
	}
	return out
}

// query sends the k masks of round r and checks the k answers (§6.1, §6.3).
func (e *cepoch) query(ctx context.Context, r uint32, rl *wire.RoundList) error {
	c := e.c
	_, k := int(e.v.Desc.Params.ChunkSize), int(e.v.Desc.Params.K)
	L := max(1, len(rl.Entries))
	c.mu.Lock()
	reqs := e.reqs[r]
	delete(e.reqs, r)
	c.mu.Unlock()
	rows := make([]int, k)
	q := wire.Rows{Epoch: e.v.ID, Round: r, Slots: []uint32{e.slot}}
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
		hooks.Row(&c.hk, e.v.ID, r, t, rows[t], L)
		mk, err := pir.Query(e.others, uint64(r), uint32(t), L, rows[t])
		if err != nil {
			return err
		}
		q.Rows = append(q.Rows, mk)
	}
	rep, release, err := askPIR(ctx, c.call, e.answerBufs, q.Marshal(), 64+k*(8+int(e.v.Desc.Params.ChunkSize)))
	defer release()
	// The ids stay in flight until the epoch ends: answered, corrupted or
	// lost, none is requested again in this epoch (§6.4 v3).
	if err != nil {
		return err
	}
	var ans wire.Rows
	if err := ans.Unmarshal(rep, 1, k, int(e.v.Desc.Params.ChunkSize)); err != nil {
		return err
	}
	for t := 0; t < k; t++ {
		row := ans.Rows[t]
		if len(row) != int(e.v.Desc.Params.ChunkSize) {
			return fmt.Errorf("node: answer of %d bytes", len(row))
		}
		pir.Unpad(e.others, uint64(r), uint32(t), row)
		if len(rl.Entries) == 0 {
			// An empty list's database is one zero row: the answer
			// must be all zero, and it is a cover answer.
			if !allZero(row) {
				e.badAnswer(r, [32]byte{}, false)
			}
			continue
		}
		le := rl.Entries[rows[t]]
		// The whole row of every answer, real or cover (§6.3 v2).
		if err := pir.CheckRow(row, le.ID, int(le.Len)); err != nil {
			c.mu.Lock()
			real := t < len(reqs) && reqs[t] == le.ID && c.q.wanted(le.ID)
			c.mu.Unlock()
			e.badAnswer(r, le.ID, real)
			continue
		}
		if t < len(reqs) && reqs[t] == le.ID {
			c.deliver(le.ID, row[:le.Len])
		}
	}
	return nil
}

// askPIR sends a PIR query (body) to the primary by call and reads its
// answer, of at most max bytes, straight into a buffer of max bytes from
// the epoch's free list (free; a new one if it has none); release gives
// the buffer back once the round is done with it: delivered chunks are
// written out or decoded into copies, never kept. The free list holds at
// most queriesInFlight buffers, of the epoch's answer cap whatever n.
func askPIR(ctx context.Context, call func(context.Context, transport.Request) ([]byte, error), free chan []byte, body []byte, max int) (rep []byte, release func(), err error) {
	var buf []byte
	select {
	case buf = <-free:
	default:
	}
	if len(buf) != max {
		buf = make([]byte, max)
	}
	release = func() {
		select {
		case free <- buf:
		default:
		}
	}
	rep, err = call(ctx, transport.Request{Proto: transport.ProtoPIR, Type: wire.TypeQuery, Body: body, Timeout: transport.PollTimeout,
		Max: max, Into: buf})
	return rep, release, err
}

// badAnswer counts an answer that failed its check and tells the user: for
// a real request the chunk stays wanted, never asked for on purpose
// (§6.3); a spoiled cover answer (a random row, the zero row, or a decoy
// the client does not want) can only be a targeted attack (§6.3 v3).
// Nothing goes to the servers.
func (e *cepoch) badAnswer(r uint32, id [32]byte, real bool) {
	c := e.c
	c.mu.Lock()
	c.stats.BadAnswers++
	if real {
		c.q.failed[id] = true
	} else {
		c.stats.CoverAttacks++
	}
	c.mu.Unlock()
	if real {
		c.progress("warning: a server corrupted a PIR answer in round %d (nothing is reported; the chunk stays wanted and is taken only when a later decoy draw lands on it)", r)
		return
	}
	c.progress("warning: attack: a server corrupted the answer to a cover query in round %d, a targeted attack on this client (nothing is reported to the servers)", r)
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
