//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// TestAbortSelectionFramesNoDownstream (the rev40a review's attack, m = 5,
// S_2 alone corrupt): in round q S_2 passes nothing on and spreads no
// evidence; as soon as S_0 and S_1 answer its request for their
// attestation of q, it signs an abort for q's missing publication and
// hands it to the chain with its own attestation (lacking part 3 only)
// and those two. Judged on that selection, part 3 was backed by three of
// four and the honest S_3 charged. Now the verdict waits for the others'
// attestations, which every honest server adds and relays: every honest
// server charges S_2 and nobody honest.
func TestAbortSelectionFramesNoDownstream(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		_, byID, id, chain := fiveChain(t)
		bad := byID[chain[2]]
		bad.mu.Lock()
		e := bad.epochs[id]
		q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 2
		bad.mu.Unlock()
		never := func() time.Duration { return time.Hour }
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r == q }, spreadLate: never})
		var s0a, s1a *wire.Attest
		if err := wait.Until(context.Background(), 5*time.Minute, func() bool {
			for _, a := range bad.askAttests(e, wire.AbortNoPub, q, "") {
				switch a.Signer {
				case 0:
					s0a = &a
				case 1:
					s1a = &a
				}
			}
			return s0a != nil && s1a != nil
		}); err != nil {
			t.Fatal("S_0 and S_1 never attested round q")
		}
		t.Logf("round %d: S_0 lacks %05b, S_1 lacks %05b", q, s0a.Lacking, s1a.Lacking)
		bad.mu.Lock()
		own := bad.signAttestLocked(e, wire.AbortNoPub, q, 1<<3)
		num := e.v.Desc.Number
		bad.mu.Unlock()
		a := &wire.Abort{Epoch: id, Number: num, Round: q, Kind: wire.AbortNoPub, Signer: []byte(bad.h.ID()), Reason: []byte("no publication")}
		a.Sig, _ = proto.Sign(bad.priv, proto.AbortDigest(a))
		ev := &wire.Charge{Kind: wire.EvAbort, Number: num, Item: a.Marshal(), Attests: []wire.Attest{*s0a, *s1a, *own}}
		var others []peer.ID
		for _, x := range chain {
			if x != bad.h.ID() {
				others = append(others, x)
			}
		}
		_, err := bad.each(context.Background(), others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeCharge, Body: ev.Marshal(), Timeout: transport.ShortTimeout})
		t.Logf("abort sent: %v", err)
		honest := []peer.ID{chain[0], chain[1], chain[3], chain[4]}
		err = wait.Until(context.Background(), 2*time.Minute, func() bool {
			for _, h := range honest {
				if byID[h].ref.RefusalCounts()[chain[2]] == 0 {
					return false
				}
			}
			return true
		})
		for i, h := range chain {
			c := byID[h].ref.RefusalCounts()
			t.Logf("S_%d: counts S_0 %d S_1 %d S_2 %d S_3 %d S_4 %d", i, c[chain[0]], c[chain[1]], c[chain[2]], c[chain[3]], c[chain[4]])
		}
		if err != nil {
			t.Error("S_2 not charged at every honest server")
		}
		for _, h := range honest {
			c := byID[h].ref.RefusalCounts()
			for j, x := range chain {
				if x != bad.h.ID() && c[x] > 0 {
					t.Errorf("honest S_%d charged at %s", j, h.ShortString())
				}
			}
		}
	})
}
