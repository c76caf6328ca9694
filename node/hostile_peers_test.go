package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
	"github.com/riffle-net/riffle/store"
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
	return fixtureChain(t, s, []peer.ID{s.ID()}, 0, regFrom...)
}

// fixtureChain is fixtureEpoch with s at position pos of chain.
func fixtureChain(t testing.TB, s *Server, chain []peer.ID, pos int, regFrom ...peer.ID) *sepoch {
	t.Helper()
	p := testParams(8).Wire()
	desc := &wire.Descriptor{Number: 1, Params: p}
	e := &sepoch{pos: pos, leader: chain[0]}
	e.rounds = map[uint32]*sround{}
	tb := e.reg.Table()
	tb.Regs, tb.RegFrom = map[[32]byte]wire.Register{}, map[[32]byte]peer.ID{}
	for i, from := range regFrom {
		var c wire.ClientEntry
		c.RegKey[0], c.XKey[0] = byte(i+1), byte(0x80+i)
		c.Primary = uint16(pos)
		desc.Clients = append(desc.Clients, c)
		tb.RegFrom[c.RegKey] = from
	}
	v := &proto.View{ID: [32]byte{0xee, byte(len(regFrom))}, Desc: desc, Chain: chain, Lim: proto.LimitsFor(p, len(chain))}
	e.v, e.final = v, v
	s.mu.Lock()
	s.epochs[v.ID] = e
	for r := uint32(0); r < p.Rounds; r++ {
		x := e.round(r)
		x.list = &wire.RoundList{Epoch: v.ID, Round: r}
	}
	s.mu.Unlock()
	return e
}

// query is a client's query body for slot sl of round r with k masks
// filled with fill over one row.
func query(e *sepoch, r, sl uint32, fill byte) []byte {
	_, k := e.bk()
	q := wire.Rows{Epoch: e.v.ID, Round: r, Slots: []uint32{sl}}
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
		_, _, err := s.ix.OnPIR(ctx, c.from, wire.TypeQuery, query(e, 1, c.slot, 0))
		cancel()
		if err == nil {
			t.Errorf("%s: query accepted", c.name)
		}
		if recorded := e.pir.QueryOf(1, c.slot) != nil; recorded {
			t.Fatalf("%s: its query was recorded for slot %d", c.name, c.slot)
		}
	}
	// The victim's real query (different masks) is taken: it waits for its
	// answer (none comes in this fixture) instead of being refused.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, err := s.ix.OnPIR(ctx, victim, wire.TypeQuery, query(e, 1, 0, 1))
	if err == nil || bytes.Contains([]byte(err.Error()), []byte("different query")) {
		t.Fatalf("victim's query: %v, want a wait for its answer", err)
	}
	got := e.pir.QueryOf(1, 0)
	if len(got) == 0 || got[0][0] != 1 {
		t.Fatalf("victim's query not recorded: %v", got)
	}
}

// leaderBelow returns a fresh peer id that sorts before s in chain order
// (a leader s would follow).
func leaderBelow(t testing.TB, s *Server) peer.ID {
	for {
		id := newPeerID(t)
		if bytes.Compare([]byte(id), []byte(s.ID())) < 0 {
			return id
		}
	}
}

// TestEpochNumberBounds: a server takes a proposed epoch number N only if
// N > last and N − last ≤ certs.MaxEpochGap (a server with no epoch on record:
// N ≤ certs.MaxFirstEpoch). A refused Prepare leaves nothing behind. The bounds
// are the second line: a number within them is then refused without the
// certificate of the number before (certs.go), but epoch 1, which has none.
func TestEpochNumberBounds(t *testing.T) {
	s := beaconServer(t)
	leader := leaderBelow(t, s)
	prep := func(n uint64) []byte {
		// The server's own parameters: every one but the times is a
		// group constant (internal/proto/bounded.go).
		p := wire.Prepare{Number: n, Params: s.cfg.Params.Wire(), Chain: [][]byte{[]byte(leader), []byte(s.ID())}}
		return p.Marshal()
	}
	cases := []struct {
		last, n uint64
		ok      bool
	}{
		{0, 1, true},
		{0, certs.MaxFirstEpoch, true},
		{0, certs.MaxFirstEpoch + 1, false},
		{0, 1<<64 - 1, false},
		{5, 6, true},
		{5, 5 + certs.MaxEpochGap, true},
		{5, 5, false},
		{5, 4, false},
		{5, 5 + certs.MaxEpochGap + 1, false},
		{5, 1<<64 - 1, false},
		{1<<64 - 2, 1<<64 - 1, true},
	}
	for _, c := range cases {
		s.mu.Lock()
		s.number = c.last
		clear(s.prep)
		s.mu.Unlock()
		_, _, err := s.onPrepare(leader, prep(c.n))
		s.mu.Lock()
		held, last := len(s.prep), s.number
		s.mu.Unlock()
		bound := err != nil && strings.Contains(err.Error(), "epoch number")
		if bound == c.ok {
			t.Errorf("last %d, N %d: err %v, want within the bounds %v", c.last, c.n, err, c.ok)
		}
		if c.ok && (err == nil) != (c.n == 1) {
			t.Errorf("last %d, N %d without a certificate: err %v", c.last, c.n, err)
		}
		if last != c.last {
			t.Errorf("last %d, N %d: a Prepare moved the last number to %d", c.last, c.n, last)
		}
		if !c.ok && held != 0 {
			t.Errorf("last %d, N %d: refused Prepare left a preparation", c.last, c.n)
		}
	}
}

// TestEpochNumberPersists: the last number survives a restart of the
// server on its data directory (a restarted leader counted from 1 again
// and every other server refused it for ever).
func TestEpochNumberPersists(t *testing.T) {
	dir := t.TempDir()
	if n, err := certs.LoadNumber(dir); err != nil || n != 0 {
		t.Fatalf("fresh directory: %d, %v", n, err)
	}
	for _, n := range []uint64{1, 41, 1<<64 - 1} {
		if err := certs.SaveNumber(dir, n); err != nil {
			t.Fatal(err)
		}
		s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: dir, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Store: NewMemStore()})
		if err != nil {
			t.Fatal(err)
		}
		got := s.number
		s.Close()
		if got != n {
			t.Fatalf("restarted with last number %d, saved %d", got, n)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, EpochNumberFile), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := certs.LoadNumber(dir); err == nil {
		t.Fatal("a corrupt epoch number file was read")
	}
}

// TestProposalCensorship: (v3, §5.3) a server signs a request list only if
// every id requested in the round that it holds is in, except what the
// round-robin cut to L_max leaves out. A leader that leaves out a
// requested id is refused, and the refusal names the id; a leader that
// cuts by byte order, letting one pseudonym's many requests push out
// another's one, is refused too.
func TestProposalCensorship(t *testing.T) {
	s := beaconServer(t)
	lk := newPeerKey(t)
	leader := lk.id
	e := fixtureChain(t, s, []peer.ID{leader, s.ID()}, 1)
	var held []wire.ListEntry
	for i := 0; i < 3; i++ {
		data := []byte{byte(i), 1, 2}
		id := sha256.Sum256(data)
		if err := s.store.PutChunks([]store.Chunk{{ID: id, Data: data}}); err != nil {
			t.Fatal(err)
		}
		held = append(held, wire.ListEntry{ID: id, Len: uint32(len(data))})
	}
	sort.Slice(held, func(i, j int) bool { return bytes.Compare(held[i].ID[:], held[j].ID[:]) < 0 })
	nobody := [32]byte{0xff, 0xff} // requested, held by no server
	const r = 2
	for q := uint32(0); q <= r; q++ {
		e.man.Add(e.final.Desc.Params.Rounds, e.final.Desc.Params.ChunkSize, q, nil) // round r done, no manifests
	}
	s.mu.Lock()
	x := e.round(r)
	x.list, x.pubDone = nil, true
	x.pub.Requests = map[[32]byte]bool{held[0].ID: true, held[1].ID: true, held[2].ID: true, nobody: true}
	// Position 0 asks for two ids, position 1 for one, position 2 for
	// one nobody holds: a cut to 2 keeps position 0's first and position
	// 1's, whatever q_0.
	x.pub.ReqByPos = [][][32]byte{{held[0].ID, held[1].ID}, {held[2].ID}, {nobody}}
	s.mu.Unlock()
	cases := []struct {
		name    string
		maxRows uint32
		entries []wire.ListEntry
		ok      bool
	}{
		{"every held id", 64, held, true},
		{"one left out", 64, []wire.ListEntry{held[0], held[2]}, false},
		{"the last left out", 64, held[:2], false},
		{"empty list", 64, nil, false},
		{"round-robin cut to L_max", 2, []wire.ListEntry{held[0], held[2]}, true},
		{"byte-order cut to L_max", 2, held[:2], false},
		{"cut to L_max skips a first request", 2, held[1:], false},
	}
	for _, c := range cases {
		e.final.Desc.Params.MaxRows = c.maxRows
		rl := wire.RoundList{Epoch: e.v.ID, Round: r, Entries: c.entries}
		rl.Pairs = proto.ListPairs(x.pub.ReqByPos, c.entries)
		rl.Sigs = [][64]byte{mustSign(t, lk.priv, proto.ListDigest(&rl))}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rt, rep, err := s.onProposal(ctx, leader, rl.Marshal())
		cancel()
		if c.ok && (err != nil || rt != wire.TypeSig || len(rep) == 0) {
			t.Errorf("%s: refused: %v", c.name, err)
		}
		if !c.ok {
			if err == nil {
				t.Errorf("%s: signed", c.name)
				continue
			}
			named := refusedOmitted(err)
			if len(named) == 0 {
				t.Errorf("%s: refusal %q names no omitted id", c.name, err)
			}
			for _, id := range named {
				if id == nobody {
					t.Errorf("%s: refusal names an id nobody holds", c.name)
				}
			}
		}
	}
	// (§6.3 v3) the pairs are checked like the ids: a list whose pairs
	// leave out a position's request, or add one, is refused.
	e.final.Desc.Params.MaxRows = 64
	for name, pairs := range map[string][]wire.ListPair{
		"no pairs":   nil,
		"a pair out": proto.ListPairs(x.pub.ReqByPos, held)[1:],
		"a pair in":  append(proto.ListPairs(x.pub.ReqByPos, held), wire.ListPair{Pos: 2, Entry: 0}),
	} {
		rl := wire.RoundList{Epoch: e.v.ID, Round: r, Entries: held, Pairs: pairs}
		rl.Sigs = [][64]byte{mustSign(t, lk.priv, proto.ListDigest(&rl))}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _, err := s.onProposal(ctx, leader, rl.Marshal())
		cancel()
		if err == nil {
			t.Errorf("pairs %s: signed", name)
		}
	}
}

// TestRegListOnce: a server takes the leader's registration list only
// after the close, once, and never after the final descriptor (it raced
// setup's read of the slots, and could change the slots a server had
// signed); a list from anyone but the leader is refused before it is
// decoded. A refused list changes nothing.
func TestRegListOnce(t *testing.T) {
	s := beaconServer(t)
	lk := leaderKeyBelow(t, s)
	leader := lk.id
	e := fixtureChain(t, s, []peer.ID{leader, s.ID()}, 1)
	final := e.final
	s.mu.Lock()
	e.final = nil
	s.mu.Unlock()
	rl := wire.RegList{Epoch: e.v.ID}
	signOrders(t, &rl, e.v.ID, []crypto.PrivKey{lk.priv, s.priv})
	list := rl.Marshal()
	send := func(from peer.ID, body []byte) error {
		_, _, err := s.regs.OnRegList(from, body)
		return err
	}
	state := func() (bool, int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return e.reg.Listed()
	}
	if err := send(leader, list); err == nil {
		t.Fatal("a list before the close was taken")
	}
	e.reg.SetPhase(true, false, false)
	// From a non-leader: refused before decoding, even a body that the
	// generic caps would have read (a count of 2^32−1 registrations).
	huge := append(append([]byte(nil), e.v.ID[:]...), 0xff, 0xff, 0xff, 0xff)
	for _, from := range []peer.ID{newPeerID(t), s.ID()} {
		if err := send(from, list); err == nil {
			t.Fatal("a list not from the leader was taken")
		}
		if err := send(from, huge); err == nil || !strings.Contains(err.Error(), "not from its leader") {
			t.Fatalf("a list not from the leader was decoded: %v", err)
		}
	}
	if l, n := state(); l || n != 0 {
		t.Fatal("a refused list changed the epoch")
	}
	if err := send(leader, list); err != nil {
		t.Fatalf("the leader's list after the close: %v", err)
	}
	if l, _ := state(); !l {
		t.Fatal("the leader's list was not taken")
	}
	if err := send(leader, list); err == nil {
		t.Fatal("a second list was taken")
	}
	s.mu.Lock()
	e.final = final
	e.reg.SetPhase(true, false, true)
	s.mu.Unlock()
	if err := send(leader, list); err == nil || !strings.Contains(err.Error(), "after the final") {
		t.Fatalf("a list after the final descriptor: %v", err)
	}
	if l, _ := state(); l {
		t.Fatal("a list after the final descriptor was taken")
	}
}

// bigSigned is a signed descriptor as costly to check as they come (8
// servers, 1024 rounds: 16,384 round keys and 8 key proofs), headed by
// leader, with keys that would not verify.
func bigSigned(t testing.TB, leader peer.ID, final bool) []byte {
	p := testParams(MaxRounds).Wire()
	d := wire.Descriptor{Number: 9, Params: p}
	ids := []peer.ID{leader}
	for len(ids) < 8 {
		ids = append(ids, newPeerID(t))
	}
	sort.Slice(ids[1:], func(i, j int) bool { return bytes.Compare([]byte(ids[1+i]), []byte(ids[1+j])) < 0 })
	for _, id := range ids {
		g := wire.GroupEntry{PeerID: []byte(id), Y: make([][32]byte, MaxRounds), Yp: make([][32]byte, MaxRounds)}
		d.Group = append(d.Group, g)
	}
	return (&wire.Signed{Final: final, Desc: d, Sigs: make([][64]byte, 8)}).Marshal()
}

// TestAskerFirst: who asks is checked before any costly work. A signed
// descriptor (sign request or delivery, open or final) is refused before
// its check unless it comes from the head of its group and is of an epoch
// this server prepared or holds; on the server protocols (epoch, round) a
// peer outside the roster and every held chain may send at most
// outsiderCap bytes, whatever the type.
func TestAskerFirst(t *testing.T) {
	s := beaconServer(t)
	leader := newPeerID(t)
	outsider := newPeerID(t)
	type handler func(peer.ID, []byte) (wire.Type, []byte, error)
	handlers := map[string]handler{"sign request": s.onSignReq, "signed": s.onSigned}
	for name, h := range handlers {
		for _, final := range []bool{false, true} {
			body := bigSigned(t, leader, final)
			for _, c := range []struct {
				from peer.ID
				want string
			}{
				{outsider, "not from its leader"},
				{leader, "not prepared or held here"},
			} {
				start := time.Now()
				_, _, err := h(c.from, body)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s (final %v) from %s: %v, want %q before any check", name, final, c.from.ShortString(), err, c.want)
				}
				t.Logf("%s (final %v): refused in %v", name, final, time.Since(start))
			}
		}
	}
	kept, prep := len(s.epochs), len(s.prep)
	if kept != 0 || prep != 0 {
		t.Fatalf("refused descriptors left %d epochs, %d preparations", kept, prep)
	}
	// Caps by sender.
	server := newPeerID(t)
	s.roster.saw(server, "peer", nil)
	epoch, round := s.peers.Caps(epochCaps), s.peers.Caps(roundCaps)
	for _, typ := range []wire.Type{wire.TypeSignReq, wire.TypeSigned, wire.TypeRegList, wire.TypeStep, wire.TypePrepare} {
		if c := epoch(outsider, typ); c > outsiderCap {
			t.Errorf("epoch type %d: an outsider may send %d bytes", typ, c)
		}
		if c := epoch(server, typ); c != epochCaps(typ) {
			t.Errorf("epoch type %d: a roster server may send %d bytes, want %d", typ, c, epochCaps(typ))
		}
	}
	for _, typ := range []wire.Type{wire.TypeBatch, wire.TypeSubmitBatch, wire.TypePadAnswers, wire.TypeProposal} {
		if c := round(outsider, typ); c > outsiderCap {
			t.Errorf("round type %d: an outsider may send %d bytes", typ, c)
		}
		if c := round(server, typ); c != roundCaps(typ) {
			t.Errorf("round type %d: a roster server may send %d bytes", typ, c)
		}
	}
}

// TestOutsiderCapOnStream: through a real stream, a peer outside the
// roster that sends more than outsiderCap on the epoch protocol is cut off
// at the frame header (stream reset, nothing decoded); a small body is
// read and refused with a reason.
func TestOutsiderCapOnStream(t *testing.T) {
	s := beaconServer(t)
	h, err := newHost(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.AddAddrs(s.ID(), s.h.Addrs(), time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = transport.Call(ctx, h, s.ID(), transport.Request{Proto: ProtoEpoch, Type: wire.TypeSignReq, Body: make([]byte, outsiderCap+1), Timeout: 5 * time.Second})
	if err == nil || strings.Contains(err.Error(), "peer refused") {
		t.Fatalf("an outsider's body over the cap: %v, want the stream cut", err)
	}
	_, err = transport.Call(ctx, h, s.ID(), transport.Request{Proto: ProtoEpoch, Type: wire.TypeSignReq, Body: make([]byte, 64), Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "peer refused") {
		t.Fatalf("an outsider's small body: %v, want a refusal", err)
	}
}

// TestClientPolls: long polls on the client protocol are bounded. A
// WaitList from a peer that registered no slot in the epoch here is
// refused at once (it held a stream to the epoch's end); an outsider's
// WaitOpen waits at most Tunables.OutsiderPoll (it waited 10 minutes); an outsider
// has at most polls.OutsiderPerPeer polls in flight and all outsiders at
// most polls.MaxOutsiders, while a registered client is still admitted.
func TestClientPolls(t *testing.T) {
	s := beaconServer(t)
	victim := newPeerID(t)
	e := fixtureEpoch(t, s, victim)
	waitList := (&wire.EpochRef{Epoch: e.v.ID, Round: 7}).Marshal()
	waitOpen := (&wire.EpochRef{}).Marshal()
	poll := func(ctx context.Context, from peer.ID, typ wire.Type, body []byte) (time.Duration, error) {
		start := time.Now()
		_, _, err := s.handleClient(ctx, from, typ, body)
		return time.Since(start), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s.mu.Lock()
	e.rounds[7].listBytes = nil // round 7's list is not final yet
	s.mu.Unlock()
	if d, err := poll(ctx, newPeerID(t), wire.TypeWaitList, waitList); err == nil || d > 4*time.Second {
		t.Fatalf("an outsider's WaitList: %v after %v, want a refusal at once", err, d)
	}
	short, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if d, err := poll(short, victim, wire.TypeWaitList, waitList); err == nil || d < 250*time.Millisecond {
		t.Fatalf("the registered client's WaitList: %v after %v, want a wait", err, d)
	}
	scancel()
	s.cfg.Timing.OutsiderPoll = 300 * time.Millisecond
	if d, err := poll(ctx, newPeerID(t), wire.TypeWaitOpen, waitOpen); err == nil || d > 4*time.Second {
		t.Fatalf("an outsider's WaitOpen: %v after %v, want an end after %v", err, d, s.cfg.Timing.OutsiderPoll)
	}
	// Counts: polls held open until hold ends.
	s.cfg.Timing.OutsiderPoll, s.polls.Outsiders = time.Minute, 3
	hold, release := context.WithCancel(ctx)
	started := make(chan struct{}, 8)
	held := func(from peer.ID) {
		go func() { started <- struct{}{}; poll(hold, from, wire.TypeWaitOpen, waitOpen) }()
	}
	waitIn := func(n int) {
		<-started
		if err := wait.UntilEvery(context.Background(), 5*time.Second, 5*time.Millisecond, func() bool { total, _ := s.polls.Counts(); return total >= n }); err != nil {
			t.Fatalf("%d polls not in flight", n)
		}
	}
	one := newPeerID(t)
	held(one)
	waitIn(1)
	held(one)
	waitIn(2)
	if d, err := poll(ctx, one, wire.TypeWaitOpen, waitOpen); err == nil || !strings.Contains(err.Error(), "from this peer") || d > 4*time.Second {
		t.Fatalf("a third poll of one outsider: %v after %v", err, d)
	}
	held(newPeerID(t))
	waitIn(3)
	if d, err := poll(ctx, newPeerID(t), wire.TypeWaitOpen, waitOpen); err == nil || !strings.Contains(err.Error(), "without a slot") || d > 4*time.Second {
		t.Fatalf("an outsider's poll over the outsiders' bound: %v after %v", err, d)
	}
	short, scancel = context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	if d, err := poll(short, victim, wire.TypeWaitOpen, waitOpen); err == nil || d < 250*time.Millisecond {
		t.Fatalf("the registered client's WaitOpen with outsiders at their bound: %v after %v, want a wait", err, d)
	}
	release()
}

// TestStreamLimitsSeparate: a flood of inbound client-protocol streams,
// from as many peer ids as it takes, is stopped by the client protocols'
// own budget while the chain's protocols still open streams (they shared
// one system budget with everyone); one peer gets at most
// transport.LimitClientPeerStreams per client protocol.
func TestStreamLimitsSeparate(t *testing.T) {
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(ResourceLimits()))
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	open := func(p peer.ID, proto protocol.ID) error {
		st, err := rm.OpenStream(p, network.DirInbound)
		if err != nil {
			return err
		}
		if err := st.SetProtocol(proto); err != nil {
			st.Done()
			return err
		}
		return nil // held open until rm closes
	}
	flooder := newPeerID(t)
	n := 0
	for ; n < 10*transport.LimitClientPeerStreams; n++ {
		if open(flooder, ProtoClient) != nil {
			break
		}
	}
	if n != transport.LimitClientPeerStreams {
		t.Fatalf("one peer opened %d client streams, want %d", n, transport.LimitClientPeerStreams)
	}
	total := 0
	for total < 4*transport.LimitStreamsInbound {
		p := newPeerID(t)
		k := 0
		for ; k < transport.LimitClientPeerStreams && open(p, ProtoPIR) == nil; k++ {
		}
		total += k
		if k < transport.LimitClientPeerStreams {
			break
		}
	}
	if total != transport.LimitClientProtoStreams {
		t.Fatalf("the PIR protocol took %d streams, want its budget %d", total, transport.LimitClientProtoStreams)
	}
	for _, proto := range []protocol.ID{ProtoEpoch, ProtoRound, ProtoRoster, ProtoClient} {
		if err := open(newPeerID(t), proto); err != nil {
			t.Fatalf("%s refused a stream during a PIR flood: %v", proto, err)
		}
	}
}

// TestStepAndForwardSenderFirst: a setup step is decoded only once its
// sender is found to be the chain's server of that step (its body claimed
// up to 512 MiB from anyone), and a forwarded registration is checked only
// if a chain server forwards it.
func TestStepAndForwardSenderFirst(t *testing.T) {
	s := beaconServer(t)
	other := newPeerID(t)
	chain := []peer.ID{s.ID(), other}
	if bytes.Compare([]byte(other), []byte(s.ID())) < 0 {
		chain = []peer.ID{other, s.ID()}
	}
	pos := 0
	if chain[1] == s.ID() {
		pos = 1
	}
	e := fixtureChain(t, s, chain, pos)
	e.stepMsgs = map[int]*wire.Step{}
	step := append(append([]byte(nil), e.v.ID[:]...), 0, byte(1-pos), 0x1f, 0xff, 0xff, 0xff)
	for _, from := range []peer.ID{newPeerID(t), s.ID()} {
		_, _, err := s.onStep(from, step)
		if err == nil || !strings.Contains(err.Error(), "wrong server") {
			t.Fatalf("a step claiming 512 MiB from %s: %v, want refused before decoding", from.ShortString(), err)
		}
	}
	if pos != 0 {
		e = fixtureChain(t, s, []peer.ID{s.ID()}, 0)
	}
	reg := (&wire.Forwarded{Reg: wire.Register{Epoch: e.v.ID}}).Marshal()
	_, _, err := s.regs.OnForwarded(newPeerID(t), reg)
	if err == nil || !strings.Contains(err.Error(), "outside the chain") {
		t.Fatalf("a registration forwarded by an outsider: %v, want refused before its check", err)
	}
	s.mu.Lock()
	n := e.reg.ForwardedCount()
	s.mu.Unlock()
	if n != 0 {
		t.Fatal("a refused forward was kept")
	}
}

// TestServerConnsProtected: the connection manager trims only far above
// what a primary serves (libp2p's default trimmed above 192 connections,
// so a crowd of client connections got the chain's links closed), and the
// connections of roster servers are protected from trimming either way.
func TestServerConnsProtected(t *testing.T) {
	s, s2 := beaconServer(t), beaconServer(t)
	cm, ok := lp(s.h).ConnManager().(*connmgr.BasicConnMgr)
	if !ok {
		t.Fatalf("connection manager %T", lp(s.h).ConnManager())
	}
	if info := cm.GetInfo(); info.LowWater < transport.LimitConnsInbound || info.HighWater < transport.LimitConns {
		t.Fatalf("connections trimmed from %d down to %d, want at least %d/%d", info.HighWater, info.LowWater, transport.LimitConns, transport.LimitConnsInbound)
	}
	s2.h.AddAddrs(s.ID(), s.h.Addrs(), time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s2.sayHello(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	if !lp(s.h).ConnManager().IsProtected(s2.ID(), serverConnTag) || !lp(s2.h).ConnManager().IsProtected(s.ID(), serverConnTag) {
		t.Fatal("a roster server's connection is not protected")
	}
}
