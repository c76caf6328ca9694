package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// TestLeaderTricksFail plays the leader's n−1 tricks of a bounded leader
// (docs/protocol.md §3) against honest servers over the wire, with the
// leader's own host: a client cap of 1, other group constants changed, a
// registration window cut short or stretched to 2^30 ms (the window is a
// group constant), a round limit of an hour, and a close before the registration deadline. Every
// honest server refuses each of them.
func TestLeaderTricksFail(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(8)
		p.RegWindowMs = 6000 // long enough to try an early close
		tn := startAnonNet(t, 3, 0, 2, p, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Wait for an epoch open on every server.
		var leader *Server
		var honest []*Server
		var id [32]byte
		until(t, ctx, time.Minute, func() bool {
			open := 0
			for _, s := range tn.servers {
				s.mu.Lock()
				if s.open != nil {
					id = s.open.v.ID
					open++
				}
				s.mu.Unlock()
			}
			return open == len(tn.servers)
		}, "no epoch opened")
		chain := tn.servers[0].chain()
		// The leader is whoever sent the open epoch's Prepare (leaders rotate).
		tn.servers[0].mu.Lock()
		lead := tn.servers[0].epochs[id].leader
		tn.servers[0].mu.Unlock()
		for _, s := range tn.servers {
			if s.ID() == lead {
				leader = s
			} else {
				honest = append(honest, s)
			}
		}
		// A close right after the open (the first registration's arrival).
		for _, h := range honest {
			_, err := transport.Call(ctx, leader.h, h.ID(), transport.Request{Proto: ProtoEpoch, Type: wire.TypeCloseReq, Body: (&wire.EpochRef{Epoch: id}).Marshal(), Timeout: transport.ShortTimeout})
			if err == nil || !strings.Contains(err.Error(), "registration deadline") {
				t.Fatalf("early close accepted by %s: %v", h.ID().ShortString(), err)
			}
		}
		// Parameters the leader may not choose.
		tricks := map[string]func(*Params){
			"client cap 1":                    func(q *Params) { q.MaxClients = 1 },
			"client cap below floor":          func(q *Params) { q.MaxClients = MinClientCap - 1 },
			"client cap not the group's":      func(q *Params) { q.MaxClients = MinClientCap * 2 },
			"rounds not the group's":          func(q *Params) { q.Rounds = 4 },
			"index retention not the group's": func(q *Params) { q.IndexHours++ },
			"pace not the group's":            func(q *Params) { q.RoundIntervalMs++ },
			"pace below the floor":            func(q *Params) { q.RoundIntervalMs = 0 },
			"short registration window":       func(q *Params) { q.RegWindowMs = 1 },
			// (issue 25 point 4) a leader held an epoch open this long.
			"2^30 ms registration window": func(q *Params) { q.RegWindowMs = 1 << 30 },
			// The round limit is the leader's, below a stated ceiling:
			// an hour's would hold every round it stalls that long.
			"hour-long round limit": func(q *Params) { q.RoundLimitMs = 3_600_000 },
		}
		for name, trick := range tricks {
			q := p
			trick(&q)
			prep := wire.Prepare{Number: 1 << 40, Params: q.Wire()}
			for _, c := range chain {
				prep.Chain = append(prep.Chain, []byte(c))
			}
			for _, h := range honest {
				// Refused for its parameters, not for a later check.
				_, err := transport.Call(ctx, leader.h, h.ID(), transport.Request{Proto: ProtoEpoch, Type: wire.TypePrepare, Body: prep.Marshal(), Timeout: transport.ShortTimeout})
				if err == nil || !strings.Contains(err.Error(), "group's") && !strings.Contains(err.Error(), "outside") {
					t.Fatalf("%s: prepare not refused for its parameters by %s: %v", name, h.ID().ShortString(), err)
				}
			}
		}
		// The window is a group constant: a longer one is refused too, the
		// round limit is the leader's to choose.
		q := p
		q.RegWindowMs *= 2
		if err := proto.CheckGroupParams(q.Wire(), p.Wire()); err == nil {
			t.Fatal("a longer registration window taken")
		}
		q = p
		q.RoundLimitMs *= 2
		if err := proto.CheckGroupParams(q.Wire(), p.Wire()); err != nil {
			t.Fatalf("another round limit refused: %v", err)
		}
	})
}

// TestClientSelection checks the selection of §3 (v3): when more clients
// registered than the cap, every primary keeps its quota, and a primary
// signs only a final descriptor that keeps all its clients or is full and
// keeps its quota.
func TestClientSelection(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var id [32]byte
		id[0] = 7
		primaryOf := map[[32]byte]uint16{}
		regs := []map[[32]byte]wire.Register{{}, {}}
		var keys [][32]byte
		for i := range 103 {
			k := sha256.Sum256([]byte(fmt.Sprint(i)))
			p := uint16(0)
			if i >= 100 {
				p = 1 // a small primary: 3 clients
			}
			primaryOf[k] = p
			regs[p][k] = wire.Register{RegKey: k}
			keys = append(keys, k)
		}
		n, m := uint32(MinClientCap), 2
		sel := proto.SelectClients(id, [32]byte{}, keys, primaryOf, nil, n, m)
		if len(sel) != int(n) {
			t.Fatalf("%d selected, cap %d", len(sel), n)
		}
		per := map[uint16]int{}
		var final []wire.ClientEntry
		for i, k := range sel {
			if i > 0 && bytes.Compare(sel[i-1][:], k[:]) >= 0 {
				t.Fatal("selection not in slot order")
			}
			per[primaryOf[k]]++
			final = append(final, wire.ClientEntry{RegKey: k, Primary: primaryOf[k]})
		}
		if per[1] != 3 || per[0] < proto.PrimaryQuota(n, m) {
			t.Fatalf("per primary %v, quota %d", per, proto.PrimaryQuota(n, m))
		}
		for p := range regs {
			if err := proto.CheckPrimaryKept(final, regs[p], nil, n, m); err != nil {
				t.Fatalf("primary %d refuses the selection: %v", p, err)
			}
		}
		// The n−1 attack: the small primary's clients dropped but one.
		if err := proto.CheckPrimaryKept(final[:1], regs[1], nil, n, m); err == nil {
			t.Fatal("a descriptor that drops clients and is not full was accepted")
		}
		// Full, but below the big primary's quota.
		var stuffed []wire.ClientEntry
		for i := range int(n) {
			k := sha256.Sum256([]byte(fmt.Sprint("sybil", i)))
			stuffed = append(stuffed, wire.ClientEntry{RegKey: k, Primary: 1})
		}
		if err := proto.CheckPrimaryKept(stuffed, regs[0], nil, n, m); err == nil {
			t.Fatal("a full descriptor below the quota was accepted")
		}
		// Under the cap nothing is dropped.
		if got := proto.SelectClients(id, [32]byte{}, keys[:10], primaryOf, nil, n, m); len(got) != 10 {
			t.Fatalf("%d of 10 kept under the cap", len(got))
		}
	})
}

// lockedBuf is a progress sink safe for concurrent writes.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMinAnonymity: in an epoch whose anonymity set, counted over clients
// registered through servers it trusts, is below its minimum, a client
// says why and holds its jobs, sending cover only (the epoch runs for the
// others); a client that trusts both primaries counts both clients and
// carries its job.
func TestMinAnonymity(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 3, 0, 2, testParams(8), nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var alone, pinned lockedBuf
		a, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 2, Now: true, Server: tn.servers[0].Addrs()[0].String(), Progress: &alone, Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 2, Now: true, Server: tn.servers[1].Addrs()[0].String(), Require: []peer.ID{tn.servers[0].ID()},
			Progress: &pinned, Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		held := make(chan error, 1)
		go func() {
			_, err := a.Share(ctx, bytes.NewReader([]byte("held")), "held.bin", false)
			held <- err
		}()
		if _, err := b.Share(ctx, bytes.NewReader([]byte("carried")), "carried.bin", false); err != nil {
			t.Fatalf("the pinned client's job: %v", err)
		}
		if !strings.Contains(pinned.String(), "2 through trusted servers") {
			t.Fatalf("pinned client: %s", pinned.String())
		}
		if err := wait.UntilEvery(ctx, time.Minute, 50*time.Millisecond, func() bool { return a.Stats().Rounds >= 8 }); err != nil {
			t.Fatal("the holding client sends no cover")
		}
		if st := a.Stats(); st.Uploaded != 0 {
			t.Fatalf("the holding client uploaded: %+v", st)
		}
		select {
		case err := <-held:
			t.Fatalf("held share returned: %v", err)
		default:
		}
		if s := alone.String(); !strings.Contains(s, "jobs wait") || !strings.Contains(s, "--min-anonymity") {
			t.Fatalf("the holding client does not say why: %s", s)
		}
	})
}
