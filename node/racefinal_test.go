//go:build riffletest

package node

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestAbortRacesFinal (the rev42a review's F2, m = 4): a corrupt
// non-leader C hands the leader its final signature and at the same time
// sends the honest non-leaders an abort for round 0's missing
// publication: one hop against the leader's two. Before, they ended the
// epoch on it before their final descriptor (refused once ended: they
// never attested a round of it); once the final certificate came
// (C shows it), the abort waited for their attestations: nobody charged,
// for good, 3 of 3 runs. Now a server holds such an abort until its
// final descriptor comes, then takes it: round 0 not yet due there,
// attested with nothing lacking, and C is charged everywhere. The
// finalSigned hook plays the race.
func TestAbortRacesFinal(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		fn := certNet(t, 2*time.Second)
		start := fn.servers[0].lastNumber() + 1
		byID := map[peer.ID]*Server{}
		for _, s := range fn.servers {
			byID[s.ID()] = s
		}
		var mu sync.Mutex
		var (
			done   bool
			sdKept *wire.Signed
			cID    peer.ID
			lead   peer.ID
			honest []*Server
			evKey  string
		)
		for _, srv := range fn.servers {
			leader := srv
			leader.hooks.Store(&serverHooks{finalSigned: func(sd *wire.Signed) {
				mu.Lock()
				defer mu.Unlock()
				if done || sd.Desc.Number < start {
					return
				}
				done = true
				id := proto.EpochID(&sd.Desc)
				leader.mu.Lock()
				e := leader.epochs[id]
				var chain []peer.ID
				if e != nil {
					chain = append(chain, e.v.Chain...)
				}
				leader.mu.Unlock()
				for _, p := range chain {
					if p == leader.ID() {
						continue
					}
					if cID == "" {
						cID = p
						continue
					}
					honest = append(honest, byID[p])
				}
				c := byID[cID]
				a := &wire.Abort{Epoch: id, Number: sd.Desc.Number, Round: 0, Kind: wire.AbortNoPub, Signer: []byte(cID), Reason: []byte("round 0: no publication")}
				a.Sig, _ = proto.Sign(c.priv, proto.AbortDigest(a))
				evKey = blame.ChargeKey(&wire.Charge{Kind: wire.EvAbort, Number: a.Number, Item: a.Marshal()})
				for _, h := range honest {
					if _, _, err := h.evs().OnAbort(cID, a.Marshal()); err != nil {
						t.Logf("abort refused at %s: %v", h.ID().ShortString(), err)
					}
				}
				sdKept, lead = sd, leader.ID()
			}})
		}
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return sdKept != nil }); err != nil {
			t.Fatalf("no final descriptor signed from number %d on", start)
		}
		mu.Lock()
		sd, c := sdKept, byID[cID]
		mu.Unlock()
		n := sd.Desc.Number
		time.Sleep(2 * time.Second)
		report := func(when string) map[peer.ID]string {
			out := map[peer.ID]string{}
			for _, s := range fn.servers {
				kind := "none"
				if ct, ok := s.cert.Of(n); ok {
					kind = certs.KindName(ct.Kind)
				}
				who := "(no record)"
				for _, r := range s.ref.Records(false) {
					if r.Key == evKey {
						who = r.Peer
						if who == "" {
							who = "nobody"
						}
						var ev wire.Charge
						_ = ev.Unmarshal(r.Ev)
						var at []string
						for _, a := range ev.Attests {
							at = append(at, fmt.Sprintf("%d:%b", a.Signer, a.Lacking))
						}
						t.Logf("%s: server %s (leader %v, C %v): cert of %d %s; C's abort charged %s: %s; attests %v", when, s.ID().ShortString(), s.ID() == lead, s.ID() == cID, n, kind, shortID(who), r.Reason, at)
					}
				}
				if who == "(no record)" {
					t.Logf("%s: server %s (leader %v, C %v): cert of %d %s; no record of C's abort", when, s.ID().ShortString(), s.ID() == lead, s.ID() == cID, n, kind)
				}
				out[s.ID()] = who
			}
			return out
		}
		report("2s after")
		// C shows the final certificate it holds (as a gap or a sync page
		// would): the signed final descriptor with every signature.
		ab, ok := honest[0].cert.Of(n)
		if ok {
			fc := &wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: proto.EpochID(&sd.Desc), Digest: sha256.Sum256(sd.Desc.Marshal()), Chain: ab.Chain}
			for i, sg := range sd.Sigs {
				fc.Sigs = append(fc.Sigs, wire.CertSig{Index: uint16(i), Sig: sg})
			}
			honest[0].cert.TakeOutranking(fc)
		}
		// C's charge at every other server, waited for a minute with the
		// network running: a verdict, once given, stays (docs/protocol.md
		// §3), so once there it is the minute's.
		wait.Until(context.Background(), time.Minute, func() bool {
			for _, s := range fn.servers {
				charged := false
				for _, r := range s.ref.Records(false) {
					charged = charged || r.Key == evKey && r.Peer == cID.String()
				}
				if s != c && !charged {
					return false
				}
			}
			return true
		}) // on a timeout the checks below say where it is missing
		got := report("charged, or a minute later")
		for _, s := range fn.servers {
			if s == c {
				continue
			}
			if got[s.ID()] != cID.String() {
				t.Errorf("server %s: C's abort before the final descriptor charged %s, want C %s", s.ID().ShortString(), shortID(got[s.ID()]), cID.ShortString())
			}
		}
	})
}

func shortID(s string) string {
	if p, err := peer.Decode(s); err == nil {
		return p.ShortString()
	}
	return s
}
