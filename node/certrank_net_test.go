//go:build riffletest

package node

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestFinalLostToOneServer: a leader signs its final descriptor, delivers
// it to every server of its chain but a victim V and signs a coordination
// abort ("final descriptor not delivered"), which reaches V too (the
// swarm's seeds 165 and 167). V certifies the number by the abort, the
// others by the final descriptor, and the abort after the final charges
// the leader there, not at V (blame.ChargeOf). Before, the first
// certificate of a number stayed, so V kept the abort one for good and
// its count of the leader stayed one below the others' (in seed 167 the
// leader was then out for its budget everywhere but at V, and the servers
// derived different leaders for the next number, for good). Now the final
// certificate outranks the abort one (certOutranks): V takes it from the
// next Prepare's previous certificate or its certificate sync, recomputes
// the number's charges, and every server holds the final certificate and
// the same count of the leader; epochs go on.
func TestFinalLostToOneServer(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		fn := certNet(t, 2*time.Second)
		bad, victim := fn.servers[0], fn.servers[1]
		var mu sync.Mutex
		var held uint64 // the number whose final descriptor V missed
		bad.hooks.Store(&serverHooks{
			signedTo: func(final bool, chain []peer.ID) []peer.ID {
				mu.Lock()
				defer mu.Unlock()
				if !final || held != 0 {
					return chain
				}
				held = bad.lastNumber()
				var to []peer.ID
				for _, p := range chain {
					if p != victim.ID() {
						to = append(to, p)
					}
				}
				return to
			},
		})
		number := func() uint64 {
			mu.Lock()
			defer mu.Unlock()
			return held
		}
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool { return number() != 0 }); err != nil {
			t.Fatalf("the leader never held its final descriptor back; numbers %v", fn.numbers())
		}
		n := number()
		// Every server holds n's final certificate and counts the
		// leader's abort after it alike, once it came.
		same := func() bool {
			counts := map[int]bool{}
			for _, s := range fn.servers {
				c, ok := s.cert.Of(n)
				if !ok || c.Kind != wire.CertFinal {
					return false
				}
				counts[s.ref.RefusalCounts()[bad.ID()]] = true
			}
			return len(counts) == 1 && !counts[0]
		}
		start := time.Now()
		err := wait.Until(context.Background(), 2*time.Minute, same)
		t.Logf("every server holds the final certificate of %d and counts the leader alike %v after the hold", n, time.Since(start).Round(100*time.Millisecond))
		for i, s := range fn.servers {
			kind := "none"
			if c, ok := s.cert.Of(n); ok {
				kind = certs.KindName(c.Kind)
			}
			t.Logf("server %d: certificate of %d %s, leader counted %d, next leader here %s", i, n, kind, s.ref.RefusalCounts()[bad.ID()], proto.LeaderOf(s.cert.Next(), s.takenChain(s.cert.Next())).ShortString())
		}
		if err != nil {
			t.Fatalf("the servers hold different certificates of %d or count the leader differently (victim %s, leader %s; numbers %v)", n, victim.ID().ShortString(), bad.ID().ShortString(), fn.numbers())
		}
		if got := victim.ref.RefusalCounts()[bad.ID()]; got < 1 {
			t.Errorf("the victim does not count the leader's abort after its final")
		}
		took := fn.waitEpochs(t, fn.epochs(), 2*time.Minute)
		t.Logf("next epoch for every client %v later", took.Round(100*time.Millisecond))
	})
}

// TestOpenLostTimeoutCertified: a leader delivers its signed open
// descriptor to one server V only and aborts ("open failed"). V holds the
// open signatures and certifies the number by the abort; the two others
// signed the open descriptor too, never had it, and once the abort ended
// the epoch there they sign the number's timeout, which certifies it
// there when they do not fetch the abort certificate first (here the
// servers that hold it answer no certificate request until the timeout
// one is made): an abort and a timeout certificate of one number, every
// server honest (so an open and a timeout signature of one server for
// one number are no evidence of equivocation). Before, each server kept
// the first it had, for good: V and the leader the abort certificate, the
// two others the timeout one, under which none of the number's evidence
// charges anyone. Now the abort certificate outranks the timeout one
// (certOutranks), and every server holds it.
func TestOpenLostTimeoutCertified(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		fn := certNet(t, 2*time.Second)
		bad := fn.servers[0]
		var mu sync.Mutex
		var held uint64
		number := func() uint64 {
			mu.Lock()
			defer mu.Unlock()
			return held
		}
		var hide atomic.Bool
		hide.Store(true)
		for _, s := range fn.servers[1:] {
			s.hooks.Store(&serverHooks{hideCerts: func() bool {
				c, ok := s.cert.Of(number())
				return hide.Load() && number() != 0 && ok && c.Kind == wire.CertAbort
			}})
		}
		bad.hooks.Store(&serverHooks{
			hideCerts: func() bool { return hide.Load() && number() != 0 },
			signedTo: func(final bool, chain []peer.ID) []peer.ID {
				mu.Lock()
				defer mu.Unlock()
				if final || held != 0 {
					return chain
				}
				held = bad.lastNumber()
				// V is not the next number's leader.
				next := proto.LeaderOf(held+1, chain)
				for _, p := range chain {
					if p != bad.ID() && p != next {
						return []peer.ID{bad.ID(), p}
					}
				}
				return chain
			},
		})
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool { return number() != 0 }); err != nil {
			t.Fatalf("the leader never held its open descriptor back; numbers %v", fn.numbers())
		}
		n := number()
		kinds := func() []string {
			var out []string
			for _, s := range fn.servers {
				k := "none"
				if c, ok := s.cert.Of(n); ok {
					k = certs.KindName(c.Kind)
				}
				out = append(out, k)
			}
			return out
		}
		timedOut := func() bool {
			for _, k := range kinds() {
				if k == "timeout" {
					return true
				}
			}
			return false
		}
		if err := wait.Until(context.Background(), 2*time.Minute, timedOut); err != nil {
			t.Fatalf("no timeout certificate of %d: %v (numbers %v)", n, kinds(), fn.numbers())
		}
		t.Logf("number %d: certificates %v", n, kinds())
		hide.Store(false)
		start := time.Now()
		allAbort := func() bool {
			for _, k := range kinds() {
				if k != "abort" {
					return false
				}
			}
			return true
		}
		err := wait.Until(context.Background(), 2*time.Minute, allAbort)
		t.Logf("number %d: certificates %v, %v after the abort certificate's holders answer again", n, kinds(), time.Since(start).Round(100*time.Millisecond))
		if err != nil {
			t.Fatalf("the servers hold different certificates of %d: %v (numbers %v)", n, kinds(), fn.numbers())
		}
		took := fn.waitEpochs(t, fn.epochs(), 2*time.Minute)
		t.Logf("next epoch for every client %v later", took.Round(100*time.Millisecond))
	})
}

// TestEquivocatorCharged: a chain server that signed the final descriptor
// of number N then signs N's timeout and sends the vote to the others
// (as it would to help honest servers outside the chain certify N's
// timeout while N runs). Each honest server holds N's final certificate
// with its final signature: the two are its equivocation, charged at every
// honest server through the evidence log (and relayed). Before, a vote of
// a certified number was dropped: nobody was charged.
func TestEquivocatorCharged(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		fn := certNet(t, 2*time.Second)
		bad := fn.servers[3]
		// A final number of bad's.
		var final *wire.Cert
		for n := bad.cert.Top(); n > 0 && final == nil; n-- {
			if c, ok := bad.cert.Of(n); ok && c.Kind == wire.CertFinal && certs.InChain(c, bad.ID()) {
				final = c
			}
		}
		if final == nil {
			t.Fatal("no final certificate with the equivocator in its chain")
		}
		pos := 0
		for i, b := range final.Chain {
			if peer.ID(b) == bad.ID() {
				pos = i
			}
		}
		sig, err := proto.Sign(bad.priv, proto.TimeoutDigest(final.Number, final.Chain))
		if err != nil {
			t.Fatal(err)
		}
		vote := &wire.Cert{Kind: wire.CertTimeout, Number: final.Number, Chain: final.Chain, Sigs: []wire.CertSig{{Index: uint16(pos), Sig: sig}}}
		var others []peer.ID
		for _, s := range fn.servers[:3] {
			others = append(others, s.ID())
		}
		bad.notifyAll(others, wire.TypeTimeoutVote, vote.Marshal())
		start := time.Now()
		charged := func() bool {
			for _, s := range fn.servers[:3] {
				if s.ref.RefusalCounts()[bad.ID()] < 1 {
					return false
				}
			}
			return true
		}
		err = wait.Until(context.Background(), time.Minute, charged)
		for i, s := range fn.servers[:3] {
			t.Logf("server %d counts %v", i, s.ref.RefusalCounts())
		}
		if err != nil {
			t.Fatalf("the equivocator of %d not charged at every honest server", final.Number)
		}
		t.Logf("charged at every honest server %v after its vote", time.Since(start).Round(100*time.Millisecond))
		for i, s := range fn.servers[:3] {
			for _, h := range fn.servers[:3] {
				if n := s.ref.RefusalCounts()[h.ID()]; n != 0 {
					t.Errorf("server %d charged honest %s %d times", i, h.ID().ShortString(), n)
				}
			}
		}
		took := fn.waitEpochs(t, fn.epochs(), 2*time.Minute)
		t.Logf("next epoch for every client %v later", took.Round(100*time.Millisecond))
	})
}

// certNet starts four founders and four clients, chains of at least three
// servers and a leader timeout of lead, and waits for their first epoch.
func certNet(t *testing.T, lead time.Duration) *foundedNet {
	fn := startFounded(t, 4, 4, 2, testParams(2), func(i int, c *ServerConfig) {
		c.LeaderTimeout = lead
		c.MinServers = 3
	})
	fn.waitEpochs(t, 0, 2*time.Minute)
	return fn
}
