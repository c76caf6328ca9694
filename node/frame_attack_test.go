//go:build riffletest

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
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
				id, chain = eid, e.final.chain
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal("no epoch reached its rounds")
	}
	return id, chain
}

// TestFutureRootFramesHonest: the middle server of three signs a batch
// root of its own part of a round not yet open (admitted, a few rounds
// ahead), sends it to the chain, asks the others for their absence
// attestations of that round a quarter of a round limit later, and signs a
// "no publication" abort of it with what they signed. Before, each
// server started the round's absence clock at the first root it saw, so
// both honest servers attested S_0's part (and the publication) lacking,
// and every server charged S_0, an honest server. Now an absence is due
// only a round limit and the hops after the round opened by the public
// schedule (the publication or void of round q − mixDepth here): the
// honest servers attest nothing, the abort's signer is charged, and the
// epochs go on.
func TestFutureRootFramesHonest(t *testing.T) {
	virtual(t, func(t *testing.T) {
		p := testParams(16)
		p.RoundLimitMs, p.RoundIntervalMs = 4000, 2000 // the round stays ahead while the clock would run
		fn := startFounded(t, 3, 3, 3, p, nil)
		byID := map[peer.ID]*Server{}
		for _, s := range fn.servers {
			byID[s.ID()] = s
		}
		id, chain := runningEpoch(t, fn.servers[0])
		bad := byID[chain[1]]
		bad.mu.Lock()
		e := bad.epochs[id]
		q := e.listHigh + uint32(e.final.desc.Params.W) + roundsAhead - 2
		n, pos := e.v.desc.Number, e.pos
		bad.mu.Unlock()
		if q >= p.Rounds {
			t.Fatalf("round %d beyond the epoch", q)
		}
		// A signed root of the bad server's own part of round q.
		b := wire.Batch{Epoch: id, Round: q, S: uint16(pos + 1), Root: [32]byte{7}}
		sig, err := sign(bad.priv, batchDigest(&b))
		if err != nil {
			t.Fatal(err)
		}
		root := (&wire.Root{Epoch: id, Round: q, S: b.S, Root: b.Root, Sig: sig}).Marshal()
		var others []peer.ID
		for _, p := range chain {
			if p != bad.ID() {
				others = append(others, p)
			}
		}
		ctx := context.Background()
		for _, to := range others {
			if _, err := call(ctx, bad.h, to, request{Proto: ProtoRound, Type: wire.TypeRoot, Body: root, Timeout: shortTimeout}); err != nil {
				t.Logf("root to %s: %v", to.ShortString(), err)
			}
		}
		time.Sleep(time.Duration(p.RoundLimitMs)*time.Millisecond/4 + 200*time.Millisecond)
		got := bad.askAttests(e, wire.AbortNoPub, q, "")
		bad.mu.Lock()
		open := e.listHigh
		own := bad.signAttestLocked(e, wire.AbortNoPub, q, 1<<uint(len(chain))-1)
		bad.mu.Unlock()
		t.Logf("round %d (newest list %d): %d honest attestations of its absences", q, open, len(got))
		a := &wire.Abort{Epoch: id, Number: n, Round: q, Kind: wire.AbortNoPub, Signer: []byte(bad.ID()), Reason: []byte(fmt.Sprintf("round %d: no publication", q))}
		if a.Sig, err = sign(bad.priv, abortDigest(a)); err != nil {
			t.Fatal(err)
		}
		ev := wire.Charge{Kind: wire.EvAbort, Number: n, Item: a.Marshal(), Attests: append(got, *own)}
		e0 := fn.epochs()
		for _, to := range others {
			if _, err := call(ctx, bad.h, to, request{Proto: ProtoEpoch, Type: wire.TypeCharge, Body: ev.Marshal(), Timeout: shortTimeout}); err != nil {
				t.Logf("charge to %s: %v", to.ShortString(), err)
			}
		}
		bad.mu.Lock()
		bad.endQuiet(e, "the attacker's own abort")
		bad.mu.Unlock()
		took := fn.waitEpochs(t, e0, 2*time.Minute)
		fn.shareFetch(t, 5*time.Minute)
		time.Sleep(5 * time.Second) // relays of the evidence settle
		for _, to := range others {
			counts := byID[to].refusalCounts()
			t.Logf("server %s counts: S_0 %d, middle (attacker) %d, last %d", to.ShortString(), counts[chain[0]], counts[chain[1]], counts[chain[2]])
			for _, h := range others {
				if counts[h] != 0 {
					t.Errorf("server %s charged the honest %s %d times", to.ShortString(), h.ShortString(), counts[h])
				}
			}
			if counts[bad.ID()] < 1 {
				t.Errorf("server %s did not charge the abort's signer", to.ShortString())
			}
		}
		t.Logf("next epoch %v after the abort", took.Round(100*time.Millisecond))
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
func TestEvidenceFloodKeepsCharges(t *testing.T) {
	virtual(t, func(t *testing.T) {
		fn := startFounded(t, 3, 3, 3, testParams(2), nil)
		fn.waitEpochs(t, 2, 3*time.Minute)
		bad, v := fn.servers[2], fn.servers[0]
		// Two final numbers of ended epochs whose chain holds bad.
		var finals []*wire.Cert
		for n := v.certTop() - 1; n > 0 && len(finals) < 2; n-- {
			if c, ok := v.certOf(n); ok && c.Kind == wire.CertFinal && inChain(mustChain(t, c), bad.ID()) {
				finals = append(finals, c)
			}
		}
		if len(finals) < 2 {
			t.Fatalf("fewer than two final numbers below %d", v.certTop())
		}
		abort := func(c *wire.Cert, reason string) []byte {
			a := &wire.Abort{Epoch: c.Epoch, Number: c.Number, Kind: wire.AbortFault, Signer: []byte(bad.ID()), Reason: []byte(reason)}
			sig, err := sign(bad.priv, abortDigest(a))
			if err != nil {
				t.Fatal(err)
			}
			a.Sig = sig
			return (&wire.Charge{Kind: wire.EvAbort, Number: c.Number, Item: a.Marshal()}).Marshal()
		}
		send := func(body []byte) {
			if _, err := call(context.Background(), bad.h, v.ID(), request{Proto: ProtoEpoch, Type: wire.TypeCharge, Body: body, Timeout: shortTimeout}); err != nil {
				t.Logf("charge: %v", err)
			}
		}
		counted := func() int { return len(v.chargedNumbers()[bad.ID()]) }
		send(abort(finals[1], "first"))
		send(abort(finals[0], "second"))
		if err := wait.Until(context.Background(), 30*time.Second, func() bool { return counted() == 2 }); err != nil {
			t.Fatalf("the two aborts not counted: %v", v.chargedNumbers()[bad.ID()])
		}
		for i := range 2 * refusalKeep {
			send(abort(finals[0], fmt.Sprintf("flood %d", i)))
		}
		time.Sleep(5 * time.Second) // the evidence settles
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
		if held > 1 {
			t.Errorf("%d records of one signer's epoch held", held)
		}
	})
}

func mustChain(t *testing.T, c *wire.Cert) []peer.ID {
	t.Helper()
	ch, err := certChain(c)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
