package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/pir"
)

// newPeerID returns a fresh Ed25519 peer id (a hostile peer's identity).
func newPeerID(t testing.TB) peer.ID {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fixtureEpoch installs on s a finalised epoch in which s is the only
// server and the primary of one client per peer of regFrom, registered by
// that peer; every round's request list is empty (one zero row).
func fixtureEpoch(t testing.TB, s *Server, regFrom ...peer.ID) *sepoch {
	t.Helper()
	p := testParams(8)
	desc := &wire.Descriptor{Number: 1, Params: p}
	e := &sepoch{pos: 0, rounds: map[uint32]*sround{}, regs: map[[32]byte]wire.Register{}, regFrom: map[[32]byte]peer.ID{}}
	for i, from := range regFrom {
		var c wire.ClientEntry
		c.RegKey[0], c.XKey[0] = byte(i+1), byte(0x80+i)
		desc.Clients = append(desc.Clients, c)
		e.regFrom[c.RegKey] = from
	}
	v := &view{id: [32]byte{0xee, byte(len(regFrom))}, desc: desc, chain: []peer.ID{s.ID()}, lim: limitsFor(p, 1)}
	e.v, e.final = v, v
	s.mu.Lock()
	s.epochs[v.id] = e
	for r := uint32(0); r < p.Rounds; r++ {
		x := e.round(r)
		x.list = &wire.RoundList{Epoch: v.id, Round: r}
	}
	s.mu.Unlock()
	return e
}

// query is a client's query body for slot sl of round r with k masks
// filled with fill over one row.
func query(e *sepoch, r, sl uint32, fill byte) []byte {
	_, k := e.bk()
	q := wire.Rows{Epoch: e.v.id, Round: r, Slots: []uint32{sl}}
	for t := 0; t < k; t++ {
		m := make([]byte, pir.MaskBytes(1))
		m[0] = fill & 1
		q.Rows = append(q.Rows, m)
	}
	return q.Marshal()
}

// TestPIRQuerySlotOwner: (v3, §6.1) a primary takes a query for slot i
// only from the peer that registered slot i. An outsider's zero masks for
// the victim's slot are refused and leave no trace; the victim's own query
// is then still taken.
func TestPIRQuerySlotOwner(t *testing.T) {
	s := beaconServer(t)
	victim, other := newPeerID(t), newPeerID(t)
	e := fixtureEpoch(t, s, victim, other)
	cases := []struct {
		name string
		from peer.ID
		slot uint32
	}{
		{"outsider that never registered", newPeerID(t), 0},
		{"client of another slot", other, 0},
		{"the server itself", s.ID(), 0},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, _, err := s.handlePIR(ctx, c.from, wire.TypeQuery, query(e, 1, c.slot, 0))
		cancel()
		if err == nil {
			t.Errorf("%s: query accepted", c.name)
		}
		s.mu.Lock()
		_, recorded := e.rounds[1].queries[c.slot]
		s.mu.Unlock()
		if recorded {
			t.Fatalf("%s: its query was recorded for slot %d", c.name, c.slot)
		}
	}
	// The victim's real query (different masks) is taken: it waits for its
	// answer (none comes in this fixture) instead of being refused.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, err := s.handlePIR(ctx, victim, wire.TypeQuery, query(e, 1, 0, 1))
	if err == nil || bytes.Contains([]byte(err.Error()), []byte("different query")) {
		t.Fatalf("victim's query: %v, want a wait for its answer", err)
	}
	s.mu.Lock()
	got := e.rounds[1].queries[0]
	s.mu.Unlock()
	if len(got) == 0 || got[0][0] != 1 {
		t.Fatalf("victim's query not recorded: %v", got)
	}
}
