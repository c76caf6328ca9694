//go:build riffletest

package node

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/evidence"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestEdgeSplitCharged (the rev41a review's case, m = 5, S_1 and S_2
// corrupt): S_1 shows its root of round q to S_2 and to S_4 only, timed
// to reach S_4 1.5 ms before S_4's last instant for part 1 (its due and
// LateGrace): held there. S_4 relays it at once, but the copy reaches S_0
// and S_3 after theirs. S_2 passes nothing on; S_1 and S_2 withhold
// their attestations. Before, S_0 and S_3 attested part 1 lacking and S_4
// held: judged on the three honest attestations, all an honest server
// ever gets, nobody was charged for good (4 of 5 runs). Now S_4 signs its
// relay, a copy with one relay signature counts a relay step later, and
// the three honest servers attest alike: a corrupt server is charged.
func TestEdgeSplitCharged(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		_, byID, id, chain := fiveChain(t)
		s1, bad, s4 := byID[chain[1]], byID[chain[2]], byID[chain[4]]
		bad.mu.Lock()
		e := bad.epochs[id]
		q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 2
		bad.mu.Unlock()
		never := func() time.Duration { return time.Hour }
		s1.hooks.Store(&serverHooks{rootTo: func(r uint32, to peer.ID, receiver bool) bool {
			return r != q || (to != chain[0] && to != chain[3])
		}, rootDelay: func(r uint32, to peer.ID) time.Duration {
			if r != q || to != chain[4] {
				return 0
			}
			s4.mu.Lock()
			defer s4.mu.Unlock()
			e4 := s4.epochs[id]
			due := e4.absenceDue(q)
			if due == nil {
				t.Logf("round %d not open at S_4", q)
				return 0
			}
			target := due[1].Add(e4.dues().LateGrace()).Add(-1500 * time.Microsecond)
			t.Logf("S_1 holds its root for S_4 %v (S_4's part-1 due %v + grace)", time.Until(target), time.Until(due[1]))
			return time.Until(target)
		}, spreadLate: never})
		bad.hooks.Store(&serverHooks{silentOut: func(r uint32) bool { return r == q },
			rootTo: func(r uint32, _ peer.ID, _ bool) bool { return r != q }, spreadLate: never})
		honest := []int{0, 3, 4}
		var as []wire.Attest
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			as = as[:0]
			for _, i := range honest {
				s := byID[chain[i]]
				s.mu.Lock()
				if ep := s.epochs[id]; ep != nil && ep.attested[q] != nil {
					as = append(as, *ep.attested[q])
				}
				s.mu.Unlock()
			}
			if len(as) == len(honest) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		for _, a := range as {
			t.Logf("S_%d attested lacking %05b", a.Signer, a.Lacking)
		}
		var ref time.Time
		for _, i := range []int{4, 0, 3} {
			s := byID[chain[i]]
			s.mu.Lock()
			ep := s.epochs[id]
			if ref.IsZero() {
				ref = ep.openAt[q]
			}
			rel := func(x time.Time) time.Duration {
				if x.IsZero() {
					return -1
				}
				return x.Sub(ref)
			}
			due := ep.dues().Due(ep.times(q))
			var voidAt time.Time
			if x := ep.rounds[q]; x != nil {
				voidAt = x.voidAt
			}
			t.Logf("S_%d (from S_4's opening): open %v part0 %v part1 came %v due1 %v due1+grace %v void %v ended %v", i, rel(ep.openAt[q]), rel(ep.rootAt[rootKey{q, 1}]), rel(ep.rootAt[rootKey{q, 2}]), rel(due[1]), rel(due[1].Add(ep.dues().LateGrace())), rel(voidAt), rel(ep.endedAt))
			s.mu.Unlock()
		}
		if len(as) != len(honest) {
			t.Fatalf("only %d honest attestations of round %d", len(as), q)
		}
		s0 := byID[chain[0]]
		s0.mu.Lock()
		e0 := s0.epochs[id]
		ctx := evidence.ChargeCtx(&s0.cert, evEp(e0))
		ab := &wire.Abort{Epoch: id, Number: e0.v.Desc.Number, Round: q, Kind: wire.AbortNoPub, Signer: []byte(s0.ID()), Reason: []byte("no publication")}
		s0.mu.Unlock()
		var err error
		if ab.Sig, err = proto.Sign(s0.priv, proto.AbortDigest(ab)); err != nil {
			t.Fatal(err)
		}
		ev := &wire.Charge{Kind: wire.EvAbort, Number: ab.Number, Item: ab.Marshal()}
		blame.MergeAttests(ev, as)
		who, why, err := blame.ChargeOf(ev, ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("on the three honest attestations: %q (%s)", who, why)
		if a, b, c := as[0].Lacking&2, as[1].Lacking&2, as[2].Lacking&2; a != b || b != c {
			t.Errorf("the honest servers split on part 1 (S_0 %v, S_3 %v, S_4 %v lacking it)", a != 0, b != 0, c != 0)
		}
		if who != chain[1] && who != chain[2] {
			t.Errorf("on the honest attestations, S_1 and S_2 withholding theirs: charged %q, want S_1 or S_2", who)
		}
	})
}
