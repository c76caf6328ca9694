//go:build riffletest

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// runningEpoch waits until server s holds an epoch in its rounds and
// returns its id and chain.
func runningEpoch(t *testing.T, s *Server) ([32]byte, []peer.ID) {
	t.Helper()
	var id [32]byte
	var chain []peer.ID
	if err := wait.Until(context.Background(), 2*time.Minute, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for eid, e := range s.epochs {
			if e.final != nil && e.setupDone && !e.ended && e.listHigh >= 1 {
				id, chain = eid, e.final.Chain
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal("no epoch reached its rounds")
	}
	return id, chain
}

// TestFutureRootFramesHonest: the server at chain position 1 of four signs a batch
// root of its own part of a round not yet open (admitted, a few rounds
// ahead), sends it to the chain, asks the others for their absence
// attestations of that round a quarter of a round limit later, and signs a
// "no publication" abort of it with what they signed. Before, each
// server started the round's absence clock at the first root it saw, so
// the honest servers attested S_0's part (and the publication) lacking,
// and every server charged S_0, an honest server. Now an absence is due
// only a round limit and the hops after the round opened by the public
// schedule (the publication or void of round q − mixDepth here): the
// honest servers attest nothing, the abort's signer is charged, and the
// epochs go on.
func TestFutureRootFramesHonest(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		fr := startFutureRoot(t)
		bad, e, q, chain, others := fr.bad, fr.e, fr.q, fr.chain, fr.others
		p := e.final.Desc.Params
		time.Sleep(time.Duration(p.RoundLimitMs)*time.Millisecond/4 + 200*time.Millisecond)
		got := bad.askAttests(e, wire.AbortNoPub, q, "")
		bad.mu.Lock()
		open := e.listHigh
		own := bad.signAttestLocked(e, wire.AbortNoPub, q, 1<<uint(len(chain))-1)
		n := e.v.Desc.Number
		bad.mu.Unlock()
		t.Logf("round %d (newest list %d): %d honest attestations of its absences", q, open, len(got))
		a := &wire.Abort{Epoch: e.v.ID, Number: n, Round: q, Kind: wire.AbortNoPub, Signer: []byte(bad.ID()), Reason: []byte(fmt.Sprintf("round %d: no publication", q))}
		var err error
		if a.Sig, err = proto.Sign(bad.priv, proto.AbortDigest(a)); err != nil {
			t.Fatal(err)
		}
		ev := wire.Charge{Kind: wire.EvAbort, Number: n, Item: a.Marshal(), Attests: append(got, *own)}
		e0 := fr.fn.epochs()
		for _, to := range others {
			if _, err := transport.Call(context.Background(), bad.h, to, transport.Request{Proto: ProtoEpoch, Type: wire.TypeCharge, Body: ev.Marshal(), Timeout: transport.ShortTimeout}); err != nil {
				t.Logf("charge to %s: %v", to.ShortString(), err)
			}
		}
		bad.mu.Lock()
		bad.endQuiet(e, "the attacker's own abort")
		bad.mu.Unlock()
		took := fr.fn.waitEpochs(t, e0, 2*time.Minute)
		fr.fn.shareFetch(t, 5*time.Minute)
		time.Sleep(5 * time.Second) // virtual time: relays of the evidence settle (no charge is a non-event, nothing to wait on)
		fr.noHonestCharged(t, true)
		t.Logf("next epoch %v after the abort", took.Round(100*time.Millisecond))
	})
}

// futureRoot is a network of four (three needed) whose server at chain
// position 1 sent a signed root of its own part of a round a few rounds
// ahead to the other three.
type futureRoot struct {
	fn            *foundedNet
	byID          map[peer.ID]*Server
	bad           *Server
	e             *sepoch // bad's
	q             uint32
	chain, others []peer.ID
}

func startFutureRoot(t *testing.T) *futureRoot {
	t.Helper()
	p := testParams(16)
	p.RoundLimitMs, p.RoundIntervalMs = 4000, 2000 // the round stays ahead while the clock would run
	fn := startFounded(t, 4, 4, 3, p, func(i int, c *ServerConfig) { c.MinServers = 3 })
	fr := &futureRoot{fn: fn, byID: map[peer.ID]*Server{}}
	for _, s := range fr.fn.servers {
		fr.byID[s.ID()] = s
	}
	id, chain := runningEpoch(t, fr.fn.servers[0])
	fr.chain, fr.bad = chain, fr.byID[chain[1]]
	bad := fr.bad
	bad.mu.Lock()
	fr.e = bad.epochs[id]
	e := fr.e
	fr.q = e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 2
	pos := e.pos
	bad.mu.Unlock()
	if fr.q >= p.Rounds {
		t.Fatalf("round %d beyond the epoch", fr.q)
	}
	b := wire.Batch{Epoch: id, Round: fr.q, S: uint16(pos + 1), Root: [32]byte{7}}
	sig, err := proto.Sign(bad.priv, batchDigest(&b))
	if err != nil {
		t.Fatal(err)
	}
	root := (&wire.Root{Epoch: id, Round: fr.q, S: b.S, Root: b.Root, Sig: sig}).Marshal()
	for _, p := range chain {
		if p != bad.ID() {
			fr.others = append(fr.others, p)
		}
	}
	for _, to := range fr.others {
		if _, err := transport.Call(context.Background(), bad.h, to, transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: root, Timeout: transport.ShortTimeout}); err != nil {
			t.Logf("root to %s: %v", to.ShortString(), err)
		}
	}
	return fr
}

// noHonestCharged checks that no honest server charged an honest one,
// and, if badCharged, that each charged the attacker.
func (fr *futureRoot) noHonestCharged(t *testing.T, badCharged bool) {
	t.Helper()
	for _, to := range fr.others {
		counts := fr.byID[to].ref.RefusalCounts()
		t.Logf("server %s counts: S_0 %d, S_1 (attacker) %d, S_2 %d, last %d", to.ShortString(), counts[fr.chain[0]], counts[fr.chain[1]], counts[fr.chain[2]], counts[fr.chain[3]])
		for _, h := range fr.others {
			if counts[h] != 0 {
				t.Errorf("server %s charged the honest %s %d times", to.ShortString(), h.ShortString(), counts[h])
			}
		}
		if badCharged && counts[fr.bad.ID()] < 1 {
			t.Errorf("server %s did not charge the abort's signer", to.ShortString())
		}
	}
}

// TestFutureRootFramesSuccessor: as TestFutureRootFramesHonest, a root
// of a round not yet open, and nothing more: its successor S_2 waits for
// that input from the root. Before (m = 3, where the successor is the
// last server), it claimed the lack half a round limit later, S_0 had
// the round, which it had not mixed, signed void, and every server
// charged the successor. Now the wait counts from the latest S_0 could
// mix the round (partCame): no lack is claimed before the round runs,
// then the real batch's root conflicts with the announced one, and the
// attacker is named for its two signed roots and left out.
func TestFutureRootFramesSuccessor(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		fr := startFutureRoot(t)
		// The attacked epoch ends (or completes) with round q never void.
		ended := func() bool {
			for _, s := range fr.fn.servers {
				s.mu.Lock()
				e := s.epochs[fr.e.v.ID]
				over := e == nil || e.ended
				s.mu.Unlock()
				if !over {
					return false
				}
			}
			return true
		}
		if err := wait.Until(context.Background(), 3*time.Minute, ended); err != nil {
			t.Fatal("the attacked epoch did not end")
		}
		for i, s := range fr.fn.servers {
			s.mu.Lock()
			var void bool
			if e := s.epochs[fr.e.v.ID]; e != nil {
				x := e.rounds[fr.q]
				void = x != nil && x.void
				t.Logf("server %d: epoch ended: %s", i, e.reason)
			}
			s.mu.Unlock()
			if void {
				t.Errorf("server %d: round %d, not yet open when its root came, made void", i, fr.q)
			}
		}
		var honest []*Client
		for i, c := range fr.fn.clients {
			if fr.fn.servers[i%len(fr.fn.servers)] != fr.bad {
				honest = append(honest, c)
			}
		}
		from := honest[0].Stats().Epochs
		start := time.Now()
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool { return honest[0].Stats().Epochs > from+1 }); err != nil {
			t.Fatalf("no epoch after the attack (numbers %v)", fr.fn.numbers())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		data := anonRand(t, 3000)
		link, err := honest[0].Share(ctx, bytes.NewReader(data), "f.bin", false)
		if err != nil {
			t.Fatalf("share: %v", err)
		}
		path, err := honest[1].Get(ctx, link, t.TempDir())
		if err != nil {
			t.Fatalf("an acknowledged share not fetched: %v", err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("an acknowledged share fetched wrong: %v", err)
		}
		t.Logf("two epochs %v after the attack", time.Since(start).Round(100*time.Millisecond))
		if err := wait.Until(context.Background(), time.Minute, func() bool {
			for _, p := range fr.others {
				if !fr.byID[p].rb.Has(fr.bad.ID()) {
					return false
				}
			}
			return true
		}); err != nil {
			for _, p := range fr.others {
				if !fr.byID[p].rb.Has(fr.bad.ID()) {
					t.Errorf("server %s did not leave out the server that signed two roots", p.ShortString())
				}
			}
		}
		fr.noHonestCharged(t, false)
	})
}

// TestEvidenceFloodKeepsCharges: a server of the chain, charged for two
// epochs by its own fault aborts, then signs more aborts of the second
// epoch, each with another reason (another signed object), and sends them
// to a server as evidence. Before, each was a new record and the store,
// which keeps the newest few records a server, dropped the first epoch's:
// the server counted it once and no longer left it out. Now a signer has
// one record an epoch and kind of evidence (the smallest key, so that
// every server keeps the same one): the flood is dropped, both charges
// stand.
func TestEvidenceFloodKeepsCharges(t *testing.T) { evidenceFlood(t, false) }

// TestRoundFloodKeepsCharges (issue 25): the same flood as aborts of
// rounds 1..8 of the second epoch, each a slot of its own (a signer,
// epoch, kind and round). Before, the store kept the server's newest four
// records, all of the second epoch: one count, no longer left out. Now
// it keeps every record of a server's newest four numbers, and four a
// signer's abort kind and epoch.
func TestRoundFloodKeepsCharges(t *testing.T) { evidenceFlood(t, true) }

// evidenceFlood floods a server with a charged server's aborts of its
// second charged epoch, another reason each, or another round (byRound).
func evidenceFlood(t *testing.T, byRound bool) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		fn := startFounded(t, 3, 3, 3, testParams(2), nil)
		fn.waitEpochs(t, 2, 3*time.Minute)
		bad, v := fn.servers[2], fn.servers[0]
		// Two final numbers of ended epochs whose chain holds bad.
		var finals []*wire.Cert
		for n := v.cert.Top() - 1; n > 0 && len(finals) < 2; n-- {
			if c, ok := v.cert.Of(n); ok && c.Kind == wire.CertFinal && proto.InChain(mustChain(t, c), bad.ID()) {
				finals = append(finals, c)
			}
		}
		if len(finals) < 2 {
			t.Fatalf("fewer than two final numbers below %d", v.cert.Top())
		}
		abort := func(c *wire.Cert, round uint32, reason string) []byte {
			a := &wire.Abort{Epoch: c.Epoch, Number: c.Number, Round: round, Kind: wire.AbortFault, Signer: []byte(bad.ID()), Reason: []byte(reason)}
			sig, err := proto.Sign(bad.priv, proto.AbortDigest(a))
			if err != nil {
				t.Fatal(err)
			}
			a.Sig = sig
			return (&wire.Charge{Kind: wire.EvAbort, Number: c.Number, Item: a.Marshal()}).Marshal()
		}
		send := func(body []byte) {
			if _, err := transport.Call(context.Background(), bad.h, v.ID(), transport.Request{Proto: ProtoEpoch, Type: wire.TypeCharge, Body: body, Timeout: transport.ShortTimeout}); err != nil {
				t.Logf("charge: %v", err)
			}
		}
		counted := func() int { return len(v.chargedNumbers()[bad.ID()]) }
		send(abort(finals[1], 0, "first"))
		send(abort(finals[0], 0, "second"))
		if err := wait.Until(context.Background(), 30*time.Second, func() bool { return counted() == 2 }); err != nil {
			t.Fatalf("the two aborts not counted: %v", v.chargedNumbers()[bad.ID()])
		}
		for i := range 2 * chargelog.Keep {
			if byRound {
				send(abort(finals[0], uint32(i+1), "second"))
			} else {
				send(abort(finals[0], 0, fmt.Sprintf("flood %d", i)))
			}
		}
		time.Sleep(5 * time.Second) // virtual time: the evidence settles (what is dropped is a non-event)
		held := 0
		for _, b := range v.heldEvidence() {
			var ev wire.Charge
			if ev.Unmarshal(b) == nil && ev.Number == finals[0].Number {
				held++
			}
		}
		t.Logf("after the flood: numbers %v counted, %d records of number %d held", v.chargedNumbers()[bad.ID()], held, finals[0].Number)
		if counted() != 2 {
			t.Errorf("the flood of one epoch's aborts took a charge away: %v", v.chargedNumbers()[bad.ID()])
		}
		if want := map[bool]int{false: 1, true: chargelog.Keep}[byRound]; held > want {
			t.Errorf("%d records of one signer's epoch held, want at most %d", held, want)
		}
	})
}

func mustChain(t *testing.T, c *wire.Cert) []peer.ID {
	t.Helper()
	ch, err := proto.CertChain(c)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
