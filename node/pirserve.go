package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/pirround"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
)

// dbIDs returns the PIR database of a list: its ids, or none for the one
// zero row of an empty list (§5.3).
func dbRows(rows [][]byte) pir.Rows {
	if len(rows) == 0 {
		return pir.SliceRows{nil}
	}
	return pir.SliceRows(rows)
}

// answerRound does this server's PIR work of round r (§6.3): padded
// answers for every other primary's clients, then its own clients'
// answers once their masks and the others' padded answers are in.
func (s *Server) answerRound(e *sepoch, r uint32) {
	defer s.trace("answerRound", r)()
	v := e.final
	m := len(v.Chain)
	s.mu.Lock()
	x := e.round(r)
	rl := x.list
	keys := e.keys
	ok := keys != nil && e.acquire()
	s.mu.Unlock()
	if !ok {
		return
	}
	defer func() {
		s.mu.Lock()
		e.release()
		s.mu.Unlock()
	}()
	ids := make([][32]byte, len(rl.Entries))
	for i, le := range rl.Entries {
		ids[i] = le.ID
	}
	ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
	defer cancel()
	for j := 0; j < m; j++ {
		if j == e.pos {
			continue
		}
		if !s.padAnswers(e, r, j, ids, keys) {
			return
		}
	}
	if !s.answerOwn(ctx, e, x, r, ids) {
		return
	}
	if r == v.Desc.Params.Rounds-1 {
		// Give the last round's answers time to reach their clients.
		time.AfterFunc(s.cfg.Timing.LastRoundLinger, func() {
			s.mu.Lock()
			s.endQuiet(e, "complete")
			s.mu.Unlock()
		})
	}
}

// padAnswers answers the queries of primary j's clients for round r over
// the list ids, pads each answer with the key shared with its client and
// sends them to j in the background. False if the answers failed.
func (s *Server) padAnswers(e *sepoch, r uint32, j int, ids [][32]byte, keys []*pir.Keys) bool {
	v := e.final
	b, k := e.bk()
	L := max(1, len(ids))
	slots := e.clientsOf(j)
	if len(slots) == 0 {
		return true
	}
	masks := make([][]byte, 0, len(slots)*k)
	out := make([][]byte, len(slots)*k)
	for _, sl := range slots {
		for t := 0; t < k; t++ {
			masks = append(masks, keys[sl].Mask(uint64(r), uint32(t), L))
			s.hookMask(v.ID, r, sl, t, masks[len(masks)-1], L)
		}
	}
	// One recycled block for all the padded answers to primary j,
	// back to the pool once they are sent.
	block := s.pool.Get(len(out) * b)
	for i := range out {
		out[i] = block[i*b : (i+1)*b : (i+1)*b]
	}
	pirStart := time.Now()
	err := s.store.ViewChunks(ids, func(rows [][]byte) error { return s.engine.Answer(dbRows(rows), b, masks, out) })
	s.timing.add(&s.timing.pir, time.Since(pirStart))
	if err != nil {
		s.log.Error("pir answer", "round", r, "err", err)
		return false
	}
	for i, sl := range slots {
		for t := 0; t < k; t++ {
			keys[sl].XORPad(uint64(r), uint32(t), out[i*k+t])
		}
	}
	msg := (&wire.Rows{Epoch: v.ID, Round: r, Slots: slots, Rows: out}).Segments()
	// Sent in the background, on a context of its own: this function
	// goes on to its own clients and returns before the send ends.
	s.wg.Add(1)
	go func(p peer.ID) {
		defer s.wg.Done()
		sctx, scancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
		defer scancel()
		if _, err := transport.Call(sctx, s.h, p, transport.Request{Proto: ProtoRound, Type: wire.TypePadAnswers, Segments: msg, Timeout: transport.BulkTimeout}); err != nil {
			s.log.Warn("padded answers", "round", r, "err", err)
		}
		s.pool.Put(block)
	}(v.Chain[j])
	return true
}

// answerOwn waits for the masks of this primary's own clients for round r
// (every client queries every round; a silent one gets nothing after the
// round limit), answers them and combines the answers with the others'
// padded ones. False if the answers failed or the round was pruned.
func (s *Server) answerOwn(ctx context.Context, e *sepoch, x *sround, r uint32, ids [][32]byte) bool {
	v := e.final
	b, k := e.bk()
	mine := e.clientsOf(e.pos)
	wctx, wcancel := context.WithTimeout(ctx, time.Duration(v.Desc.Params.RoundLimitMs)*time.Millisecond)
	_ = s.waitFor(wctx, func() bool { return len(x.pir.Queries) >= e.handover.QueriesDue(mine, e.isDead) || e.ended })
	wcancel()
	s.mu.Lock()
	var slots []uint32
	var masks [][]byte
	for _, sl := range mine {
		if q, ok := x.pir.Queries[sl]; ok {
			slots = append(slots, sl)
			masks = append(masks, q...)
			s.hookMasks(v.ID, r, sl, q, max(1, len(ids)))
		}
	}
	s.mu.Unlock()
	if len(slots) == 0 {
		return true
	}
	out := make([][]byte, len(masks))
	for i := range out {
		out[i] = make([]byte, b)
	}
	pirStart := time.Now()
	err := s.store.ViewChunks(ids, func(rows [][]byte) error { return s.engine.Answer(dbRows(rows), b, masks, out) })
	s.timing.add(&s.timing.pir, time.Since(pirStart))
	if err != nil {
		s.log.Error("pir answer", "round", r, "err", err)
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if x.pruned {
		return false
	}
	x.pir.Own = map[uint32][][]byte{}
	for i, sl := range slots {
		x.pir.Own[sl] = out[i*k : (i+1)*k]
	}
	s.combine(e, x, r)
	return true
}

// combine finishes the answers whose own part and m-1 padded parts are in
// (§6.3); call with s.mu held.
func (s *Server) combine(e *sepoch, x *sround, r uint32) {
	fresh, free, ok := x.pir.Combine(len(e.final.Chain))
	if !ok {
		return
	}
	for sl, own := range fresh {
		s.hookCorrupt(e.final.ID, r, sl, own)
	}
	// The padded answers are in the answers now: their frames go back.
	for _, b := range free {
		s.pool.Put(b)
	}
	s.notify()
}

func (s *Server) onPadAnswers(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	// The epoch id leads the body: find the epoch to bound the rest.
	if len(body) < 36 {
		return 0, nil, errors.New("node: short padded answers")
	}
	copy(ref.Epoch[:], body[:32])
	e, err := s.epochFor(ref.Epoch)
	if err != nil {
		return 0, nil, err
	}
	b, k := e.bk()
	var rows wire.Rows
	if err := rows.Unmarshal(body, e.n(), k, b); err != nil {
		return 0, nil, err
	}
	j := -1
	for i, p := range e.final.Chain {
		if p == from {
			j = i
		}
	}
	if j < 0 || j == e.pos {
		return 0, nil, errors.New("node: padded answers from outside the chain")
	}
	if err := pirround.CheckPads(rows.Slots, rows.Rows, e.clientsOf(e.pos), b); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := e.admit(rows.Round); err != nil {
		return 0, nil, err
	}
	x := e.round(rows.Round)
	free, added := x.pir.AddPads(j, rows.Slots, rows.Rows, k, body)
	if free != nil {
		s.pool.Put(free)
	}
	if !added {
		return wire.TypeAck, ack, nil
	}
	s.combine(e, x, rows.Round)
	return wire.TypeAck, ack, nil
}

// handlePIR serves a client's k masks for a round and returns its k
// combined answers (§6.3).
func (s *Server) handlePIR(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, [][]byte, error) {
	if err := transport.Takes(ProtoPIR, t); err != nil {
		return 0, nil, err
	}
	if len(body) < 36 {
		return 0, nil, errors.New("node: short query")
	}
	var id [32]byte
	copy(id[:], body[:32])
	e, err := s.epochFor(id)
	if err != nil {
		return 0, nil, err
	}
	_, k := e.bk()
	var q wire.Rows
	if err := q.Unmarshal(body, 1, k, pir.MaskBytes(int(e.final.Desc.Params.MaxRows))); err != nil {
		return 0, nil, err
	}
	if len(q.Slots) != 1 {
		return 0, nil, errors.New("node: a query names one slot")
	}
	sl := q.Slots[0]
	if int(sl) >= e.n() || int(e.final.Desc.Clients[sl].Primary) != e.pos {
		return 0, nil, errors.New("node: slot not served by this primary")
	}
	s.mu.Lock()
	// (v3, §6.1) a query for slot i is taken only from the peer that
	// registered slot i: anyone else's first mask would be recorded and
	// the owner's real query refused as "a different query".
	owner, ok := e.reg.From(e.final.Desc.Clients[sl].RegKey)
	if !ok || owner != from {
		s.mu.Unlock()
		return 0, nil, errors.New("node: query for a slot this peer did not register")
	}
	err = e.admit(q.Round)
	s.mu.Unlock()
	if err != nil {
		return 0, nil, err
	}
	var x *sround
	if err := s.waitFor(ctx, func() bool { x = e.round(q.Round); return x.list != nil || e.ended }); err != nil || x.list == nil {
		return 0, nil, errors.New("node: no request list for this round")
	}
	L := max(1, len(x.list.Entries))
	for _, mk := range q.Rows {
		if err := pir.CheckMask(mk, L); err != nil {
			return 0, nil, err
		}
	}
	s.mu.Lock()
	if x.pruned {
		s.mu.Unlock()
		return 0, nil, fmt.Errorf("node: round %d is over", q.Round)
	}
	fresh, err := x.pir.Query(sl, q.Rows)
	if err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	if fresh {
		s.notify()
	}
	s.mu.Unlock()
	var ans [][]byte
	err = s.waitFor(ctx, func() bool { ans = x.pir.Answers[sl]; return ans != nil || e.ended || x.pruned })
	if err == nil && ans == nil {
		// The epoch ended with this round in flight: its last padded
		// answers may still be on their way, or may never come (a server
		// that saw the end first stops answering). Wait a bounded grace,
		// never the client's whole poll.
		gctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.EndGrace)
		_ = s.waitFor(gctx, func() bool { ans = x.pir.Answers[sl]; return ans != nil })
		cancel()
	}
	if ans == nil {
		return 0, nil, errors.New("node: no answer for this round")
	}
	return wire.TypeAnswer, (&wire.Rows{Epoch: id, Round: q.Round, Slots: []uint32{sl}, Rows: ans}).Segments(), nil
}
