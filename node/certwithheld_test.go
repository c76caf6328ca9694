//go:build riffletest

package node

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestWithheldFinalShownToOne: a leader gathers every signature of its
// final descriptor of N, delivers it to nobody and aborts ("final
// descriptor not delivered"): every server certifies N by the abort,
// under which the leader's coordination abort charges nobody. Numbers
// past N are certified; then the leader shows N's final certificate to
// one server V (as a gap or a sync page would). V replaces N's
// certificate (certOutranks) and charges the leader's abort after its
// final. Before, V alone did so: V counted the leader once, the others
// never, for good, and the servers derived budgets and leaders from
// different counts. Now V sends the certificate to the group
// (certs_sync.go pushCert), every server replaces N's certificate and
// counts the leader once, and epochs go on.
func TestWithheldFinalShownToOne(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		fn := certNet(t, 2*time.Second)
		bad, victim := fn.servers[0], fn.servers[1]
		var mu sync.Mutex
		var kept *wire.Signed
		bad.hooks.Store(&serverHooks{
			finalSigned: func(sd *wire.Signed) {
				mu.Lock()
				defer mu.Unlock()
				if kept == nil {
					kept = sd
				}
			},
			signedTo: func(final bool, chain []peer.ID) []peer.ID {
				mu.Lock()
				defer mu.Unlock()
				if final && kept != nil && kept.Desc.Number == bad.lastNumber() {
					return nil // nobody, itself included
				}
				return chain
			},
		})
		withheld := func() *wire.Signed {
			mu.Lock()
			defer mu.Unlock()
			return kept
		}
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool { return withheld() != nil }); err != nil {
			t.Fatalf("the leader never held its final descriptor back; numbers %v", fn.numbers())
		}
		sd := withheld()
		n := sd.Desc.Number
		past := func() bool {
			for _, s := range fn.servers {
				if s.cert.Top() < n+2 {
					return false
				}
			}
			return true
		}
		if err := wait.Until(context.Background(), 2*time.Minute, past); err != nil {
			t.Fatalf("numbers past %d not certified: %v", n, fn.numbers())
		}
		for i, s := range fn.servers {
			if c, ok := s.cert.Of(n); !ok || c.Kind != wire.CertAbort {
				t.Fatalf("server %d does not hold the abort certificate of %d", i, n)
			}
		}
		ab, _ := victim.cert.Of(n)
		fc := &wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: proto.EpochID(&sd.Desc), Digest: sha256.Sum256(sd.Desc.Marshal()), Chain: ab.Chain}
		for i, sg := range sd.Sigs {
			fc.Sigs = append(fc.Sigs, wire.CertSig{Index: uint16(i), Sig: sg})
		}
		if err := victim.cert.Check(fc); err != nil {
			t.Fatalf("the withheld final certificate does not verify: %v", err)
		}
		victim.cert.TakeOutranking(fc)
		start := time.Now()
		same := func() bool {
			for _, s := range fn.servers {
				c, ok := s.cert.Of(n)
				if !ok || c.Kind != wire.CertFinal || s.ref.RefusalCounts()[bad.ID()] != 1 {
					return false
				}
			}
			return true
		}
		err := wait.Until(context.Background(), time.Minute, same)
		for i, s := range fn.servers {
			kind := "none"
			if c, ok := s.cert.Of(n); ok {
				kind = certs.KindName(c.Kind)
			}
			t.Logf("server %d: certificate of %d %s, leader counted %d", i, n, kind, s.ref.RefusalCounts()[bad.ID()])
		}
		if err != nil {
			t.Fatalf("the servers hold different certificates of %d or count the leader differently after it was shown to %s", n, victim.ID().ShortString())
		}
		t.Logf("every server holds the final certificate of %d and counts the leader once %v after it was shown to one", n, time.Since(start).Round(100*time.Millisecond))
		for i, s := range fn.servers[1:] {
			for _, h := range fn.servers[1:] {
				if c := s.ref.RefusalCounts()[h.ID()]; c != 0 {
					t.Errorf("server %d charged honest %s %d times", i+1, h.ID().ShortString(), c)
				}
			}
		}
		took := fn.waitEpochs(t, fn.epochs(), 2*time.Minute)
		t.Logf("next epoch for every client %v later", took.Round(100*time.Millisecond))
	})
}
