//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/ltkeys"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/registry"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// Long-term client keys (docs/protocol.md §8 "After a blame").

// TestKeyStrikeDoubles: a blamed long-term key is excluded for 1, 2, 4, …
// epochs on each repeat, capped, and the exclusion and its count survive a
// restart (store bucket key-excluded); a blamed key loses its clean record.
func TestKeyStrikeDoubles(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		bs, err := chunks.OpenStore(dir, store.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{store: bs, log: quietLogger()}
		s.keys.St, s.keys.Log = s.store, s.log
		key := [32]byte{7}
		s.keys.NoteClientEnd(key, 3, false)
		if _, ok := s.keys.Seen(key); !ok {
			t.Fatal("a clean epoch left no record")
		}
		for i, w := range []uint64{11, 12, 14} {
			if got := s.keys.Strike(key, 10, []byte{byte(i)}); got != w {
				t.Fatalf("strike %d: excluded up to %d, want %d", i+1, got, w)
			}
		}
		if _, ok := s.keys.Seen(key); ok {
			t.Fatal("a blamed key kept its clean record")
		}
		bs.Close()
		bs, err = chunks.OpenStore(dir, store.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer bs.Close()
		s = &Server{store: bs, log: quietLogger()}
		s.keys.St, s.keys.Log = s.store, s.log
		for number, want := range map[uint64]bool{10: true, 11: true, 14: true, 15: false} {
			if _, got := s.keys.Excluded(key, number); got != want {
				t.Fatalf("after a restart, epoch %d: excluded %v, want %v", number, got, want)
			}
		}
		if got := s.keys.Strike(key, 20, nil); got != 28 {
			t.Fatalf("fourth strike after a restart: up to %d, want 28 (the count survives)", got)
		}
		if _, ok := s.keys.Excluded([32]byte{8}, 11); ok {
			t.Fatal("another key is excluded")
		}
		for range 20 {
			s.keys.Strike(key, 100, nil)
		}
		if got := s.keys.Strike(key, 100, nil); got != 100+1<<blame.MaxExcludeShift {
			t.Fatalf("capped exclusion %d", got)
		}
	})
}

// TestKeyExcludedEverywhere: a client named by a round blame (a second
// onion for one slot) has its long-term key excluded at every server, from
// the evidence its primary published; the same key is then refused at
// another primary with a reason that says so. Evidence with a forged
// long-term signature is refused and excludes nobody, and evidence for a
// slot no blame named (a genuine signature of an honest client that a
// malicious primary publishes) excludes nobody either.
func TestKeyExcludedEverywhere(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		bn := startBlameNet(t, 3, 3, 4, 3)
		bad := bn.clients[1] // primary: chain position 1
		badKey := bad.Inspect().LongTermPublic()
		var fired atomic.Bool
		var mu sync.Mutex
		var badEpoch [32]byte
		bad.Hooks.Store(&ClientHooks{SecondOnion: func(epoch [32]byte, r, slot uint32) bool {
			if r != 1 || !fire(&fired) {
				return false
			}
			mu.Lock()
			badEpoch = epoch
			mu.Unlock()
			return true
		}})
		recs := culpritRecords(t, bn.servers)
		number := recs[0].Number
		mu.Lock()
		if recs[0].Epoch != badEpoch {
			t.Fatal("the blame named another epoch")
		}
		mu.Unlock()
		// Every server excludes the key for the next epoch, not beyond.
		ctx := context.Background()
		if err := wait.Until(ctx, 30*time.Second, func() bool {
			for _, s := range bn.servers {
				if _, ok := s.keys.Excluded(badKey, number+1); !ok {
					return false
				}
			}
			return true
		}); err != nil {
			for i, s := range bn.servers {
				until, ok := s.keys.Excluded(badKey, number+1)
				t.Logf("server %d: excluded %v up to %d", i, ok, until)
			}
			t.Fatalf("the culprit's long-term key is not excluded everywhere: %v", err)
		}
		for i, s := range bn.servers {
			if _, ok := s.keys.Excluded(badKey, number+2); ok {
				t.Fatalf("server %d excludes a first offender beyond the next epoch", i)
			}
			x, err := s.store.(ltkeys.Recorder).KeyExclusions()
			if err != nil || x[badKey].Strikes != 1 || len(x[badKey].Evidence) == 0 {
				t.Fatalf("server %d stored %+v, %v", i, x[badKey], err)
			}
		}
		// The same key at another primary is refused, and says why.
		var prog lockedBuf
		again, err := NewClient(context.Background(), ClientConfig{Network: testNet(t), Server: bn.servers[2].Addrs()[0].String(), LongTermKey: bad.Inspect().LongTermKey(),
			Logger: rbLogger(), MinAnonymity: 1, Now: true, Progress: &prog})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { again.Close() })
		if err := wait.Until(ctx, 60*time.Second, func() bool {
			return strings.Contains(prog.String(), "long-term key is excluded")
		}); err != nil {
			t.Fatalf("the excluded key was not refused at another primary: %q", prog.String())
		}

		// Forged and unnamed evidence, sent by a chain server to the others.
		honest := bn.clients[0] // primary: chain position 0
		hKey := honest.Inspect().LongTermPublic()
		e, err := bn.servers[0].epochFor(badEpoch)
		if err != nil {
			t.Fatal(err)
		}
		var hSlot, hSig = -1, [64]byte{}
		bn.servers[0].mu.Lock()
		for i, c := range e.final.Desc.Clients {
			if lt, ok := e.reg.LT(c.RegKey); ok && lt.Key == hKey {
				hSlot, hSig = i, lt.Sig
			}
		}
		bn.servers[0].mu.Unlock()
		if hSlot < 0 {
			t.Fatal("the honest client's registration is not at its primary")
		}
		forger, err := NewLongTermKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		forged := wire.KeyEvidence{Epoch: badEpoch, Slot: uint32(hSlot), LTKey: hKey, LTSig: forger.Sign(badEpoch, e.final.Desc.Clients[hSlot].RegKey)}
		unnamed := wire.KeyEvidence{Epoch: badEpoch, Slot: uint32(hSlot), LTKey: hKey, LTSig: hSig}
		for i, s := range bn.servers[1:] {
			if _, err := transport.Call(ctx, bn.servers[0].h, s.h.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeKeyEvidence, Body: forged.Marshal(), Timeout: transport.ShortTimeout}); err == nil || !strings.Contains(err.Error(), "does not verify") {
				t.Fatalf("server %d: forged key evidence: %v, want refused", i+1, err)
			}
			if _, err := transport.Call(ctx, bn.servers[0].h, s.h.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeKeyEvidence, Body: unnamed.Marshal(), Timeout: transport.ShortTimeout}); err != nil {
				t.Fatalf("server %d: genuine evidence for an unnamed slot: %v (kept until a verdict, acknowledged)", i+1, err)
			}
		}
		for i, s := range bn.servers {
			if _, ok := s.keys.Excluded(hKey, number+1); ok {
				t.Fatalf("server %d excludes the honest client's key", i)
			}
			x, _ := s.store.(ltkeys.Recorder).KeyExclusions()
			if len(x) != 1 {
				t.Fatalf("server %d holds %d key exclusions, want the culprit's only", i, len(x))
			}
		}
	})
}

// TestLongTermSigOnlyToPrimary: before any blame, a client's long-term
// signature and key reach its primary and no other host: every frame body
// each server and client receives, requests and replies, is checked.
func TestLongTermSigOnlyToPrimary(t *testing.T) {
	virtual(t, func(t *testing.T) {
		type needle struct {
			owner peer.ID
			b     []byte
		}
		var mu sync.Mutex
		var needles []needle
		var leaks []string
		got := map[peer.ID]int{}
		hook := func(self peer.ID, typ wire.Type, body []byte) {
			mu.Lock()
			defer mu.Unlock()
			var cr wire.ClientRegister
			if typ == wire.TypeRegister && cr.Unmarshal(body, proto.GenericLimits()) == nil {
				needles = append(needles, needle{self, append([]byte(nil), cr.LTSig[:]...)}, needle{self, append([]byte(nil), cr.LTKey[:]...)})
				got[self]++
				return
			}
			for _, n := range needles {
				if n.owner != self && bytes.Contains(body, n.b) {
					leaks = append(leaks, fmt.Sprintf("message type %d to %s", typ, self.ShortString()))
				}
			}
		}
		recvHook.Store(&hook)
		t.Cleanup(func() { recvHook.Store(nil) })
		bn := startBlameNet(t, 3, 3, 3, 3)
		if err := wait.Until(context.Background(), 60*time.Second, func() bool {
			for _, c := range bn.clients {
				if c.Stats().Rounds < 4 {
					return false
				}
			}
			return true
		}); err != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("no rounds ran: %v (leaks: %v)", err, leaks)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(leaks) > 0 {
			t.Fatalf("a long-term signature or key reached a host other than its primary: %v", leaks)
		}
		for i, s := range bn.servers {
			if got[s.h.ID()] == 0 {
				t.Fatalf("server %d received no long-term signature from its client", i)
			}
		}
		for i, s := range bn.servers {
			if recs, _ := s.rb.Records(); len(recs) != 0 {
				t.Fatalf("server %d named a culprit: the check ran after a blame", i)
			}
		}
	})
}

// TestReturningClientsFirst: with more registrations than the cap, a
// primary's own order puts its returning clients of clean record first,
// then first-time keys by a lottery per address range under a cap (a
// crowded range cannot push the newcomers of other ranges out), then the
// keys whose slot ran dry; the leader fills the primary's quota from the
// front of that order, and the primary refuses a full descriptor that
// drops a returning client for a first-timer. The clean and dry records
// come from the epochs' ends (recordClients).
func TestReturningClientsFirst(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := storeServer(t)
		n, m := uint32(MinClientCap), 2
		quota := proto.PrimaryQuota(n, m)
		e := &sepoch{pos: 0}
		e.v = &proto.View{Desc: &wire.Descriptor{Params: wire.Params{MaxClients: n}}, Chain: make([]peer.ID, m)}
		tb := e.reg.Table()
		tb.Regs, tb.LT, tb.RegRange = map[[32]byte]wire.Register{}, map[[32]byte]intake.LT{}, map[[32]byte]string{}
		var seq byte
		add := func(rng string) (reg, lt [32]byte) {
			seq++
			reg, lt = [32]byte{1, seq}, [32]byte{2, seq}
			tb.Regs[reg] = wire.Register{RegKey: reg}
			tb.LT[reg] = intake.LT{Key: lt}
			tb.RegRange[reg] = rng
			return reg, lt
		}
		// Earlier epochs, as recordClients saw them end: 20 clients held their
		// slots cleanly, 5 more once clean ran dry since (4 left with their
		// cover window spent; 1, connected, sent no onion for round 3, the
		// first without a list, when the epoch of 10 rounds ended).
		prev := &sepoch{pos: 0}
		prev.roundsState.listHigh = 3
		prev.reg.Table().LT, prev.dries, prev.ranDry = map[[32]byte]intake.LT{}, map[dryKey]wire.Dry{}, map[uint32]bool{}
		prev.rounds = map[uint32]*sround{}
		next := prev.round(3)
		prevDesc := &wire.Descriptor{Number: 4, Params: wire.Params{Rounds: 10}}
		returning, dry := map[[32]byte]bool{}, map[[32]byte]bool{}
		for i := range 25 {
			reg, lt := add("198.51.100.0/24")
			prevDesc.Clients = append(prevDesc.Clients, wire.ClientEntry{RegKey: reg})
			prev.reg.Table().LT[reg] = intake.LT{Key: lt}
			if i < 24 {
				next.subs[uint32(i)] = wire.Submit{}
			}
			if i >= 20 {
				if i < 24 {
					prev.dries[dryKey{4, uint32(i)}] = wire.Dry{Round: 4, Slot: uint32(i)} // signed by S_0, this primary
					prev.ranDry[uint32(i)] = true
				}
				dry[reg] = true
				s.keys.NoteClientEnd(lt, 3, false) // clean once, before
			} else {
				returning[reg] = true
			}
		}
		prev.final = &proto.View{Desc: prevDesc}
		s.recordClients(prev)
		// First-timers: 60 from one crowded range, one each from 6 others.
		crowded, single := map[[32]byte]bool{}, map[[32]byte]bool{}
		for range 60 {
			reg, _ := add("203.0.113.0/24")
			crowded[reg] = true
		}
		for i := range 6 {
			reg, _ := add(fmt.Sprintf("192.0.%d.0/24", i))
			single[reg] = true
		}
		order, _ := e.reg.AdmissionOrder(quota, registry.SeenDry(&s.keys), s.rand)
		if len(order) != len(tb.Regs) {
			t.Fatalf("order of %d, %d registered", len(order), len(tb.Regs))
		}
		for i, k := range order {
			switch {
			case i < 20 && !returning[k]:
				t.Fatalf("place %d: not a returning client", i)
			case i >= 20 && returning[k]:
				t.Fatalf("place %d: a returning client after a first-timer", i)
			case i >= len(order)-5 && !dry[k]:
				t.Fatalf("place %d: the last places are not the dry slots' keys", i)
			}
		}
		// The lottery's first turn takes one key of every range.
		firstTurn := order[20 : 20+7]
		singles, crowdedIn := 0, 0
		for _, k := range firstTurn {
			if single[k] {
				singles++
			}
			if crowded[k] {
				crowdedIn++
			}
		}
		if singles != 6 || crowdedIn != 1 {
			t.Fatalf("first lottery turn: %d single-range keys, %d of the crowded range; want 6 and 1", singles, crowdedIn)
		}
		// The crowded range gets rangeCap places before the keys beyond its
		// cap, which come after every other range's.
		head := order[20 : 20+6+intake.RangeCap(quota)]
		crowdedIn = 0
		for _, k := range head {
			if crowded[k] {
				crowdedIn++
			}
		}
		if crowdedIn != intake.RangeCap(quota) {
			t.Fatalf("the crowded range has %d places before its overflow, cap %d", crowdedIn, intake.RangeCap(quota))
		}
		// The leader fills the quota from the front: a second primary brings
		// 100 more, so the cap n = 64 is exceeded.
		tb.Order = order
		primaryOf, rank := map[[32]byte]uint16{}, map[[32]byte]int{}
		var keys [][32]byte
		for i, k := range order {
			primaryOf[k], rank[k] = 0, i
			keys = append(keys, k)
		}
		for i := range 100 {
			k := [32]byte{3, byte(i)}
			primaryOf[k], rank[k] = 1, i
			keys = append(keys, k)
		}
		sel := proto.SelectClients([32]byte{9}, [32]byte{}, keys, primaryOf, rank, n, m)
		in := map[[32]byte]bool{}
		var final []wire.ClientEntry
		for _, k := range sel {
			in[k] = true
			final = append(final, wire.ClientEntry{RegKey: k, Primary: primaryOf[k]})
		}
		for k := range returning {
			if !in[k] {
				t.Fatal("a returning client of clean record was left out of a full epoch")
			}
		}
		for k := range single {
			if !in[k] {
				t.Fatal("a newcomer of an uncrowded range was left out by a crowded range")
			}
		}
		if err := proto.CheckPrimaryKept(final, tb.Regs, tb.Order, n, m); err != nil {
			t.Fatalf("the primary refuses the selection: %v", err)
		}
		// A leader that swaps a returning client for a first-timer further down.
		swapped := append([]wire.ClientEntry(nil), final...)
		for i, c := range swapped {
			if returning[c.RegKey] {
				for _, k := range order[quota:] {
					if !in[k] {
						swapped[i].RegKey = k
						break
					}
				}
				break
			}
		}
		if err := proto.CheckPrimaryKept(swapped, tb.Regs, tb.Order, n, m); err == nil {
			t.Fatal("a full descriptor that drops a returning client for a first-timer was accepted")
		}
	})
}

// TestForwardedRegistrationSigned: primaries sign what they forward. A
// registration list whose entry does not carry its named primary's
// signature is refused before any proof is checked and names nobody. One
// that carries it but whose proofs fail names that primary: the server
// that finds it logs and records it, keeps the primary out of its chains,
// ends the epoch, and sends the signed registration to the others; a
// server given that evidence checks it and names the primary too, and
// refuses evidence whose registration verifies or whose signature is not
// the primary's.
func TestForwardedRegistrationSigned(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var logBuf lockedBuf
		f := newHostileFixtureLog(t, slog.New(slog.NewTextHandler(&logBuf, nil)))
		e := f.open // chain a, s, b
		f.s.mu.Lock()
		e.leader = f.a.id
		e.reg.SetPhase(true, false, false)
		f.s.mu.Unlock()
		privs := []crypto.PrivKey{f.a.priv, f.s.priv, f.b.priv}
		rl := wire.RegList{Epoch: e.v.ID, Regs: []wire.Forwarded{f.forwarded(t, e, f.clients[0], 2, f.a)}}
		signOrders(t, &rl, e.v.ID, privs)
		if _, _, err := f.s.regs.OnRegList(f.a.id, rl.Marshal()); err == nil || !strings.Contains(err.Error(), "not signed by its primary") {
			t.Fatalf("an entry signed by the leader for primary 2: %v", err)
		}
		if f.s.rb.Has(f.b.id) || f.s.rb.Has(f.a.id) || strings.Contains(logBuf.String(), "culprit named") {
			t.Fatal("a registration the leader signed for another named someone")
		}
		// A registration primary 0 genuinely signed in another epoch (it
		// fails here for its epoch id alone): no evidence.
		rl.Regs = []wire.Forwarded{f.forwarded(t, f.mid, f.clients[0], 0, f.a)}
		signOrders(t, &rl, e.v.ID, privs)
		if _, _, err := f.s.regs.OnRegList(f.a.id, rl.Marshal()); err == nil || !strings.Contains(err.Error(), "another epoch") {
			t.Fatalf("a registration of another epoch: %v", err)
		}
		if f.s.rb.Has(f.a.id) || strings.Contains(logBuf.String(), "culprit named") {
			t.Fatal("a replayed registration of another epoch named its primary")
		}
		rl.Regs = []wire.Forwarded{f.forwarded(t, e, f.clients[0], 0, f.a)}
		signOrders(t, &rl, e.v.ID, privs)
		if _, _, err := f.s.regs.OnRegList(f.a.id, rl.Marshal()); err == nil || !strings.Contains(err.Error(), "signed by primary 0") {
			t.Fatalf("an entry signed by its primary whose proofs fail: %v", err)
		}
		// (The fixture's memory store keeps no records; the log and the
		// exclusion from chains show the naming. TestBadForwardNeedsFailure
		// runs on stores that keep them.)
		named := func(s *Server, log *lockedBuf, p peer.ID) bool {
			return s.rb.Has(p) && strings.Contains(log.String(), "registration blame: culprit named") && strings.Contains(log.String(), p.String())
		}
		if err := wait.Until(context.Background(), 10*time.Second, func() bool { return named(f.s, &logBuf, f.a.id) }); err != nil {
			t.Fatal("the primary that signed a failing registration is not named")
		}
		f.s.mu.Lock()
		ended := e.ended
		listed, _ := e.reg.Listed()
		f.s.mu.Unlock()
		if !ended || listed {
			t.Fatalf("epoch ended %v, list taken %v; want ended, not taken", ended, listed)
		}

		// Evidence sent by a chain server, at a second server.
		var gLog lockedBuf
		g := newHostileFixtureLog(t, slog.New(slog.NewTextHandler(&gLog, nil)))
		ge := g.open
		badFw := g.forwarded(t, ge, g.clients[0], 0, g.a)
		forged := badFw
		forged.Sig[0] ^= 1
		if _, _, err := g.s.onBadForward(g.b.id, forged.Marshal()); err == nil {
			t.Fatal("evidence with a forged primary signature was taken")
		}
		if _, _, err := g.s.onBadForward(g.stranger.id, badFw.Marshal()); err == nil {
			t.Fatal("evidence from outside the chain was taken")
		}
		if g.s.rb.Has(g.a.id) || strings.Contains(gLog.String(), "culprit named") {
			t.Fatal("refused evidence named someone")
		}
		if _, _, err := g.s.onBadForward(g.b.id, badFw.Marshal()); err != nil {
			t.Fatalf("genuine evidence refused: %v", err)
		}
		if !named(g.s, &gLog, g.a.id) {
			t.Fatal("genuine evidence named nobody")
		}
	})
}

// TestBadForwardNeedsFailure: evidence against a primary whose signed
// registration verifies is refused and names nobody (a real epoch: the
// registration is a client's own).
func TestBadForwardNeedsFailure(t *testing.T) {
	virtual(t, func(t *testing.T) {
		bn := startBlameNet(t, 3, 3, 3, 3)
		var mu sync.Mutex
		var good []byte
		var at peer.ID
		hook := func(self peer.ID, typ wire.Type, body []byte) {
			if typ != wire.TypeForward {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if good == nil {
				good, at = append([]byte(nil), body...), self
			}
		}
		recvHook.Store(&hook)
		t.Cleanup(func() { recvHook.Store(nil) })
		if err := wait.Until(context.Background(), 30*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return good != nil
		}); err != nil {
			t.Fatal("no forwarded registration seen")
		}
		recvHook.Store(nil)
		mu.Lock()
		defer mu.Unlock()
		var leader *Server
		for _, s := range bn.servers {
			if s.h.ID() == at {
				leader = s
			}
		}
		var other *Server
		for _, s := range bn.servers {
			if s != leader {
				other = s
				break
			}
		}
		_, err := transport.Call(context.Background(), other.h, leader.h.ID(), transport.Request{Proto: ProtoEpoch, Type: wire.TypeBadForward, Body: good, Timeout: transport.ShortTimeout})
		if err == nil || !strings.Contains(err.Error(), "verifies") {
			t.Fatalf("evidence whose registration verifies: %v, want refused", err)
		}
		for i, s := range bn.servers {
			if recs, _ := s.rb.Records(); len(recs) != 0 {
				t.Fatalf("server %d named %+v", i, recs)
			}
		}
	})
}

// storeServer is a Server with only a store (closed when the test ends), a
// logger and randomness: enough for the admission and exclusion rules.
func storeServer(t testing.TB) *Server {
	t.Helper()
	bs, err := chunks.OpenStore(t.TempDir(), store.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	s := &Server{store: bs, log: quietLogger(), rand: rand.Reader}
	s.keys.St, s.keys.Log = s.store, s.log
	s.rb.St, s.rb.Log = s.store, s.log
	s.win = window.Items{St: s.store, Src: winSrc{s}, Log: s.log}
	return s
}
