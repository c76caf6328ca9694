package pirserve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
)

// host is a server of two chain positions, this one S_0, with one
// client (slot 0) whose primary it is.
type host struct {
	mu       sync.Mutex
	changed  chan struct{}
	ep       *Epoch
	list     *wire.RoundList
	ended    bool
	owner    peer.ID
	complete chan struct{}
	wg       sync.WaitGroup
}

func (h *host) Epoch(id [32]byte) (*Epoch, error) {
	if id != h.ep.V.ID {
		return nil, errors.New("unknown epoch")
	}
	return h.ep, nil
}

func (h *host) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		h.mu.Lock()
		if cond() {
			h.mu.Unlock()
			return nil
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (h *host) Notify() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

func (h *host) Ended(*Epoch) bool                      { return h.ended }
func (h *host) List(*Epoch, uint32) *wire.RoundList    { return h.list }
func (h *host) QueriesDue(_ *Epoch, mine []uint32) int { return len(mine) }
func (h *host) Admit(_ *Epoch, r uint32) error {
	if r >= h.ep.V.Desc.Params.Rounds {
		return errors.New("round too far")
	}
	return nil
}
func (h *host) Owner(*Epoch, uint32) (peer.ID, bool) { return h.owner, true }
func (h *host) Acquire(*Epoch) ([]*pir.Keys, func(), bool) {
	return make([]*pir.Keys, 1), func() {}, true
}
func (h *host) Complete(*Epoch) { close(h.complete) }
func (h *host) Go(f func()) {
	h.wg.Add(1)
	go func() { defer h.wg.Done(); f() }()
}
func (h *host) Call(context.Context, peer.ID, transport.Request) ([]byte, error) {
	return nil, errors.New("no network")
}
func (h *host) Mask([32]byte, uint32, uint32, int, []byte, int) {}
func (h *host) Masks([32]byte, uint32, uint32, [][]byte, int)   {}
func (h *host) Corrupt([32]byte, uint32, uint32, [][]byte)      {}

// rowStore holds one row of b bytes an id.
type rowStore map[[32]byte][]byte

func (st rowStore) ViewChunks(ids [][32]byte, fn func(rows [][]byte) error) error {
	rows := make([][]byte, len(ids))
	for i, id := range ids {
		rows[i] = st[id]
	}
	return fn(rows)
}

const b = 16

func setup(t *testing.T) (*Service, *host, rowStore) {
	t.Helper()
	v := &proto.View{ID: [32]byte{1}, Chain: []peer.ID{"self", "other"}, Desc: &wire.Descriptor{
		Params:  wire.Params{ChunkSize: b, K: 1, MaxRows: 8, Rounds: 1, RoundLimitMs: 10000},
		Clients: []wire.ClientEntry{{RegKey: [32]byte{7}, Primary: 0}},
	}}
	h := &host{changed: make(chan struct{}), ep: &Epoch{V: v, Pos: 0, St: &Rounds{}}, owner: "client", complete: make(chan struct{})}
	st := rowStore{}
	list := &wire.RoundList{Epoch: v.ID, Round: 0}
	for i := range 3 {
		id := [32]byte{byte(10 + i)}
		row := make([]byte, b)
		for j := range row {
			row[j] = byte(16*i + j)
		}
		st[id] = row
		list.Entries = append(list.Entries, wire.ListEntry{ID: id, Len: b})
	}
	h.list = list
	sv := &Service{Host: h, Store: st, Engine: pir.NewEngine(pir.Options{}), Pool: &transport.BufPool{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Ctx: context.Background(), Spent: func(time.Duration) {},
		Linger: time.Millisecond, Grace: time.Millisecond}
	return sv, h, st
}

func query(v *proto.View, mask []byte) []byte {
	return (&wire.Rows{Epoch: v.ID, Round: 0, Slots: []uint32{0}, Rows: [][]byte{mask}}).Marshal()
}

// TestQueryAnswered: the client's mask to its primary and the other
// server's (padded) answer to its own mask combine into the row the
// client asked for, without a network; the last round's work ends the
// epoch once answered.
func TestQueryAnswered(t *testing.T) {
	sv, h, st := setup(t)
	v := h.ep.V
	const L, row = 3, 1
	other := []byte{0b101} // the other server's mask (from its key)
	mask, err := pir.PrimaryMask(row, L, [][]byte{other})
	if err != nil {
		t.Fatal(err)
	}
	type reply struct {
		segs [][]byte
		err  error
	}
	got := make(chan reply, 1)
	go func() {
		_, segs, err := sv.HandleQuery(context.Background(), "client", query(v, mask))
		got <- reply{segs, err}
	}()
	// The other server's answer to its mask, as it sends it here.
	pad := make([][]byte, 1)
	pad[0] = make([]byte, b)
	if err := pir.Reference(pir.SliceRows{st[h.list.Entries[0].ID], st[h.list.Entries[1].ID], st[h.list.Entries[2].ID]}, b, [][]byte{other}, pad); err != nil {
		t.Fatal(err)
	}
	body := (&wire.Rows{Epoch: v.ID, Round: 0, Slots: []uint32{0}, Rows: pad}).Marshal()
	if _, _, err := sv.OnPadAnswers("other", body); err != nil {
		t.Fatal(err)
	}
	sv.AnswerRound(h.ep, 0, h.list)
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	var ans wire.Rows
	if err := ans.Unmarshal(joined(r.segs), 1, 1, b); err != nil {
		t.Fatal(err)
	}
	if want := st[h.list.Entries[row].ID]; string(ans.Rows[0]) != string(want) {
		t.Fatalf("answer %x, want row %d %x", ans.Rows[0], row, want)
	}
	<-h.complete
	h.wg.Wait()
}

func joined(segs [][]byte) []byte {
	var out []byte
	for _, s := range segs {
		out = append(out, s...)
	}
	return out
}

// TestQueryRefused: a query for a slot the peer did not register, padded
// answers from outside the chain or for another primary's slots, and a
// query of a round over here are refused, and record nothing.
func TestQueryRefused(t *testing.T) {
	sv, h, _ := setup(t)
	v := h.ep.V
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, _, err := sv.HandleQuery(ctx, "stranger", query(v, []byte{1})); err == nil {
		t.Fatal("a stranger's query for the client's slot taken")
	}
	if h.ep.St.QueryOf(0, 0) != nil {
		t.Fatal("the stranger's masks recorded")
	}
	pad := [][]byte{make([]byte, b)}
	body := (&wire.Rows{Epoch: v.ID, Round: 0, Slots: []uint32{0}, Rows: pad}).Marshal()
	if _, _, err := sv.OnPadAnswers("stranger", body); err == nil {
		t.Fatal("padded answers from outside the chain taken")
	}
	if _, _, err := sv.OnPadAnswers("self", body); err == nil {
		t.Fatal("padded answers from this server itself taken")
	}
	if _, pads, from, _ := h.ep.St.Sizes(0); pads != 0 || from != 0 {
		t.Fatalf("refused padded answers recorded: %d, from %d", pads, from)
	}
	h.ep.St.Prune(1)
	if _, _, err := sv.HandleQuery(ctx, "client", query(v, []byte{1})); err == nil {
		t.Fatal("a query of a round over here taken")
	}
	if q, _, _, _ := h.ep.St.Sizes(0); q != 0 {
		t.Fatal("a query of a round over here recorded")
	}
}

// TestPrune: the rounds below the mark lose their state, give back the
// frames their padded answers held and take nothing more.
func TestPrune(t *testing.T) {
	var rs Rounds
	for r := range uint32(4) {
		if _, over, err := rs.Query(r, 0, [][]byte{{1}}); over || err != nil {
			t.Fatal(over, err)
		}
		rows := [][]byte{make([]byte, b)}
		if free, added := rs.addPads(r, 1, []uint32{0}, rows, 1, rows[0]); free != nil || !added {
			t.Fatalf("round %d: the first padded answers not kept", r)
		}
	}
	if got := rs.Prune(2); len(got) != 2 {
		t.Fatalf("%d frames back from 2 rounds, want 2", len(got))
	}
	if rs.Prune(1) != nil {
		t.Fatal("a lower mark pruned again")
	}
	if q, _, _, _ := rs.Sizes(1); q != 0 {
		t.Fatal("a pruned round kept its masks")
	}
	if _, over, _ := rs.Query(1, 0, [][]byte{{1}}); !over {
		t.Fatal("a pruned round took a query")
	}
	if _, over := rs.Answer(1, 0); !over {
		t.Fatal("a pruned round's answer not over")
	}
	if q, _, _, _ := rs.Sizes(2); q != 1 {
		t.Fatal("a kept round lost its masks")
	}
	rs.DropPads()
	if _, pads, _, _ := rs.Sizes(3); pads != 0 {
		t.Fatal("DropPads kept padded answers")
	}
}
