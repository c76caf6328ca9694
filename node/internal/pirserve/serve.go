// Package pirserve is a primary's PIR serving (docs/protocol.md §6.3):
// for each round with a final request list, the padded answers it
// computes for every other primary's clients and sends them, its own
// clients' masks taken and answered, the other chain servers' padded
// answers checked and taken, and the combined answers handed to its
// clients. The state of every round (Rounds, over package pirround's
// Round) has its own leaf lock; the server's epochs, their secrets and
// request lists stay the server's, which it gives through Host, and
// every wait is the server's (Host.WaitFor), its conditions read under
// the server's lock. No lock is held across a store read, an answer's
// computation or a send.
package pirserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/pirround"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
)

// Epoch is what PIR serving reads of an epoch whose descriptor is final:
// its view, this server's chain position, its rounds' PIR state, and the
// server's own handle of it (for Host).
type Epoch struct {
	V   *proto.View
	Pos int
	St  *Rounds
	Ref any
}

// BK are the epoch's chunk size b and k.
func (ep *Epoch) BK() (int, int) {
	return int(ep.V.Desc.Params.ChunkSize), int(ep.V.Desc.Params.K)
}

// ClientsOf returns the slots whose primary is chain server j.
func (ep *Epoch) ClientsOf(j int) []uint32 {
	var out []uint32
	for i, c := range ep.V.Desc.Clients {
		if int(c.Primary) == j {
			out = append(out, uint32(i))
		}
	}
	return out
}

// Host is what PIR serving asks of the server it runs in. The methods
// marked "locked" are called only in WaitFor's conditions, under the
// server's lock; the others take it themselves.
type Host interface {
	// Epoch is the epoch id, if its descriptor is final here.
	Epoch(id [32]byte) (*Epoch, error)
	// WaitFor blocks until cond, evaluated under the server's lock,
	// holds or ctx ends; every change of the server wakes it (Notify).
	WaitFor(ctx context.Context, cond func() bool) error
	// Notify wakes the server's waits.
	Notify()
	// Ended reports whether the epoch ended here (locked).
	Ended(ep *Epoch) bool
	// List is round r's final request list here, nil while none
	// (locked).
	List(ep *Epoch, r uint32) *wire.RoundList
	// QueriesDue is how many of mine are due to query round r (a slot
	// handed over or dead is not; locked).
	QueriesDue(ep *Epoch, mine []uint32) int
	// Admit reports whether round r may hold new state here.
	Admit(ep *Epoch, r uint32) error
	// Owner is the peer that registered slot sl here.
	Owner(ep *Epoch, sl uint32) (peer.ID, bool)
	// Acquire holds the epoch's secrets for a use outside the server's
	// lock: the PIR keys shared with each slot's client, and release to
	// call once done; false if the epoch ended.
	Acquire(ep *Epoch) (keys []*pir.Keys, release func(), ok bool)
	// Complete ends the epoch, its last round answered.
	Complete(ep *Epoch)
	// Go runs f in the background; the server waits for it on close.
	Go(f func())
	// Call is one request to p and its reply.
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	// Mask, Masks and Corrupt are the tests' hook points: masks made
	// for another primary's clients, those of this primary's clients,
	// and its combined answers (hooks.go).
	Mask(epoch [32]byte, r, slot uint32, t int, mask []byte, L int)
	Masks(epoch [32]byte, r, slot uint32, masks [][]byte, L int)
	Corrupt(epoch [32]byte, r, slot uint32, own [][]byte)
}

// Store is the part of the server's chunk store PIR serving reads: the
// rows of a list's ids, in order.
type Store interface {
	ViewChunks(ids [][32]byte, fn func(rows [][]byte) error) error
}

// Service is a server's PIR serving. It has no state of its own: each
// epoch's rounds are in its Epoch's Rounds.
type Service struct {
	Host   Host
	Store  Store
	Engine *pir.Engine
	Pool   *transport.BufPool
	Log    *slog.Logger
	// Ctx is the server's: its end ends every answer.
	Ctx context.Context
	// Spent adds the time an answer's computation took (Timing.PIR).
	Spent func(time.Duration)
	// Linger is how long the last round's answers have to reach their
	// clients before the epoch ends; Grace how long a query in flight at
	// the epoch's end waits for its answer (Tunables).
	Linger, Grace time.Duration
}

// DBRows returns the PIR database of a list: its ids, or none for the one
// zero row of an empty list (§5.3).
func DBRows(rows [][]byte) pir.Rows {
	if len(rows) == 0 {
		return pir.SliceRows{nil}
	}
	return pir.SliceRows(rows)
}

// AnswerRound does this server's PIR work of round r, whose final list
// is rl (§6.3): padded answers for every other primary's clients, then
// its own clients' answers once their masks and the others' padded
// answers are in.
func (sv *Service) AnswerRound(ep *Epoch, r uint32, rl *wire.RoundList) {
	m := len(ep.V.Chain)
	keys, release, ok := sv.Host.Acquire(ep)
	if !ok {
		return
	}
	defer release()
	ids := make([][32]byte, len(rl.Entries))
	for i, le := range rl.Entries {
		ids[i] = le.ID
	}
	ctx, cancel := context.WithTimeout(sv.Ctx, transport.BulkTimeout)
	defer cancel()
	for j := 0; j < m; j++ {
		if j == ep.Pos {
			continue
		}
		if !sv.padAnswers(ep, r, j, ids, keys) {
			return
		}
	}
	if !sv.answerOwn(ctx, ep, r, ids) {
		return
	}
	if r == ep.V.Desc.Params.Rounds-1 {
		// Give the last round's answers time to reach their clients.
		time.AfterFunc(sv.Linger, func() { sv.Host.Complete(ep) })
	}
}

// padAnswers answers the queries of primary j's clients for round r over
// the list ids, pads each answer with the key shared with its client and
// sends them to j in the background. False if the answers failed.
func (sv *Service) padAnswers(ep *Epoch, r uint32, j int, ids [][32]byte, keys []*pir.Keys) bool {
	v := ep.V
	b, k := ep.BK()
	L := max(1, len(ids))
	slots := ep.ClientsOf(j)
	if len(slots) == 0 {
		return true
	}
	masks := make([][]byte, 0, len(slots)*k)
	out := make([][]byte, len(slots)*k)
	for _, sl := range slots {
		for t := 0; t < k; t++ {
			masks = append(masks, keys[sl].Mask(uint64(r), uint32(t), L))
			sv.Host.Mask(v.ID, r, sl, t, masks[len(masks)-1], L)
		}
	}
	// One recycled block for all the padded answers to primary j,
	// back to the pool once they are sent.
	block := sv.Pool.Get(len(out) * b)
	for i := range out {
		out[i] = block[i*b : (i+1)*b : (i+1)*b]
	}
	pirStart := time.Now()
	err := sv.Store.ViewChunks(ids, func(rows [][]byte) error { return sv.Engine.Answer(DBRows(rows), b, masks, out) })
	sv.Spent(time.Since(pirStart))
	if err != nil {
		sv.Log.Error("pir answer", "round", r, "err", err)
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
	p := v.Chain[j]
	sv.Host.Go(func() {
		sctx, scancel := context.WithTimeout(sv.Ctx, transport.BulkTimeout)
		defer scancel()
		if _, err := sv.Host.Call(sctx, p, transport.Request{Proto: transport.ProtoRound, Type: wire.TypePadAnswers, Segments: msg, Timeout: transport.BulkTimeout}); err != nil {
			sv.Log.Warn("padded answers", "round", r, "err", err)
		}
		sv.Pool.Put(block)
	})
	return true
}

// answerOwn waits for the masks of this primary's own clients for round r
// (every client queries every round; a silent one gets nothing after the
// round limit), answers them and combines the answers with the others'
// padded ones. False if the answers failed or the round was pruned.
func (sv *Service) answerOwn(ctx context.Context, ep *Epoch, r uint32, ids [][32]byte) bool {
	v := ep.V
	b, k := ep.BK()
	mine := ep.ClientsOf(ep.Pos)
	wctx, wcancel := context.WithTimeout(ctx, time.Duration(v.Desc.Params.RoundLimitMs)*time.Millisecond)
	_ = sv.Host.WaitFor(wctx, func() bool {
		return ep.St.Queried(r) >= sv.Host.QueriesDue(ep, mine) || sv.Host.Ended(ep)
	})
	wcancel()
	slots, qs := ep.St.Masks(r, mine)
	if len(slots) == 0 {
		return true
	}
	var masks [][]byte
	for i, sl := range slots {
		sv.Host.Masks(v.ID, r, sl, qs[i], max(1, len(ids)))
		masks = append(masks, qs[i]...)
	}
	out := make([][]byte, len(masks))
	for i := range out {
		out[i] = make([]byte, b)
	}
	pirStart := time.Now()
	err := sv.Store.ViewChunks(ids, func(rows [][]byte) error { return sv.Engine.Answer(DBRows(rows), b, masks, out) })
	sv.Spent(time.Since(pirStart))
	if err != nil {
		sv.Log.Error("pir answer", "round", r, "err", err)
		return false
	}
	own := map[uint32][][]byte{}
	for i, sl := range slots {
		own[sl] = out[i*k : (i+1)*k]
	}
	if !ep.St.setOwn(r, own) {
		return false
	}
	sv.combine(ep, r)
	return true
}

// combine finishes the answers whose own part and m-1 padded parts are in
// (§6.3) and wakes the queries that wait for them.
func (sv *Service) combine(ep *Epoch, r uint32) {
	free, ok := ep.St.combine(r, len(ep.V.Chain), func(sl uint32, own [][]byte) { sv.Host.Corrupt(ep.V.ID, r, sl, own) })
	if !ok {
		return
	}
	// The padded answers are in the answers now: their frames go back.
	for _, b := range free {
		sv.Pool.Put(b)
	}
	sv.Host.Notify()
}

// OnPadAnswers takes another chain server's padded answers for this
// primary's clients (§6.3), checked first (pirround.CheckPads).
func (sv *Service) OnPadAnswers(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	// The epoch id leads the body: find the epoch to bound the rest.
	if len(body) < 36 {
		return 0, nil, errors.New("node: short padded answers")
	}
	copy(ref.Epoch[:], body[:32])
	ep, err := sv.Host.Epoch(ref.Epoch)
	if err != nil {
		return 0, nil, err
	}
	b, k := ep.BK()
	var rows wire.Rows
	if err := rows.Unmarshal(body, len(ep.V.Desc.Clients), k, b); err != nil {
		return 0, nil, err
	}
	j := -1
	for i, p := range ep.V.Chain {
		if p == from {
			j = i
		}
	}
	if j < 0 || j == ep.Pos {
		return 0, nil, errors.New("node: padded answers from outside the chain")
	}
	if err := pirround.CheckPads(rows.Slots, rows.Rows, ep.ClientsOf(ep.Pos), b); err != nil {
		return 0, nil, err
	}
	if err := sv.Host.Admit(ep, rows.Round); err != nil {
		return 0, nil, err
	}
	free, added := ep.St.addPads(rows.Round, j, rows.Slots, rows.Rows, k, body)
	if free != nil {
		sv.Pool.Put(free)
	}
	if added {
		sv.combine(ep, rows.Round)
	}
	return wire.TypeAck, []byte{}, nil
}

// HandleQuery serves a client's k masks for a round and returns its k
// combined answers (§6.3).
func (sv *Service) HandleQuery(ctx context.Context, from peer.ID, body []byte) (wire.Type, [][]byte, error) {
	if len(body) < 36 {
		return 0, nil, errors.New("node: short query")
	}
	var id [32]byte
	copy(id[:], body[:32])
	ep, err := sv.Host.Epoch(id)
	if err != nil {
		return 0, nil, err
	}
	_, k := ep.BK()
	var q wire.Rows
	if err := q.Unmarshal(body, 1, k, pir.MaskBytes(int(ep.V.Desc.Params.MaxRows))); err != nil {
		return 0, nil, err
	}
	if len(q.Slots) != 1 {
		return 0, nil, errors.New("node: a query names one slot")
	}
	sl := q.Slots[0]
	if int(sl) >= len(ep.V.Desc.Clients) || int(ep.V.Desc.Clients[sl].Primary) != ep.Pos {
		return 0, nil, errors.New("node: slot not served by this primary")
	}
	// (v3, §6.1) a query for slot i is taken only from the peer that
	// registered slot i: anyone else's first mask would be recorded and
	// the owner's real query refused as "a different query".
	if owner, ok := sv.Host.Owner(ep, sl); !ok || owner != from {
		return 0, nil, errors.New("node: query for a slot this peer did not register")
	}
	if err := sv.Host.Admit(ep, q.Round); err != nil {
		return 0, nil, err
	}
	var rl *wire.RoundList
	if err := sv.Host.WaitFor(ctx, func() bool { rl = sv.Host.List(ep, q.Round); return rl != nil || sv.Host.Ended(ep) }); err != nil || rl == nil {
		return 0, nil, errors.New("node: no request list for this round")
	}
	L := max(1, len(rl.Entries))
	for _, mk := range q.Rows {
		if err := pir.CheckMask(mk, L); err != nil {
			return 0, nil, err
		}
	}
	fresh, over, err := ep.St.Query(q.Round, sl, q.Rows)
	if over {
		return 0, nil, fmt.Errorf("node: round %d is over", q.Round)
	}
	if err != nil {
		return 0, nil, err
	}
	if fresh {
		sv.Host.Notify()
	}
	var ans [][]byte
	err = sv.Host.WaitFor(ctx, func() bool {
		var over bool
		ans, over = ep.St.Answer(q.Round, sl)
		return ans != nil || sv.Host.Ended(ep) || over
	})
	if err == nil && ans == nil {
		// The epoch ended with this round in flight: its last padded
		// answers may still be on their way, or may never come (a server
		// that saw the end first stops answering). Wait a bounded grace,
		// never the client's whole poll.
		gctx, cancel := context.WithTimeout(ctx, sv.Grace)
		_ = sv.Host.WaitFor(gctx, func() bool { ans, _ = ep.St.Answer(q.Round, sl); return ans != nil })
		cancel()
	}
	if ans == nil {
		return 0, nil, errors.New("node: no answer for this round")
	}
	return wire.TypeAnswer, (&wire.Rows{Epoch: id, Round: q.Round, Slots: []uint32{sl}, Rows: ans}).Segments(), nil
}
