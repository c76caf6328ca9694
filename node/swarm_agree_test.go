//go:build riffletest

package node

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The swarm's check that the control plane is one log (issue 23, §3):
// honest servers that hold the same certificate of a number and were both
// in its chain charge the same servers for that number's evidence, once
// it had time to reach them. Evidence goes to the number's chain and a
// charge may still move within swarmChargeSettle (late attestations, a
// public cause that comes later), so a number is compared once the next
// one is certified and swarmChargeSettle and swarmSettle more have passed, between the servers of its chain that no
// fault touched from its start to then (a server down or cut off misses
// the relays). The first number where two such servers differ fails the
// run.

// checkAgree fails the run at the first disagreement.
func (w *swarm) checkAgree(bad map[int]bool) {
	if msg := w.disagreement(bad); msg != "" {
		w.fail("%s", msg)
	}
}

// disagreement compares the charges of every settled number not yet
// compared (w.agreed: the numbers compared) and says where two servers
// first differ ("" if nowhere).
func (w *swarm) disagreement(bad map[int]bool) string {
	if w.agreed == nil {
		w.agreed = map[uint64]bool{}
	}
	now := time.Now()
	var settled []uint64
	for n := range w.certSeen {
		next, ok := w.certSeen[n+1]
		if !w.agreed[n] && ok && now.Sub(next) > swarmChargeSettle+w.swarmSettle()+2*swarmStep {
			settled = append(settled, n)
		}
	}
	slices.Sort(settled)
	for _, n := range settled {
		w.agreed[n] = true
		from, to := w.epochStart(n), now
		type held struct {
			i       int
			cert    *wire.Cert
			charged []string
		}
		var hs []held
		for i, sv := range w.servers {
			s := sv.s()
			if s == nil || bad[i] {
				continue
			}
			if _, t := w.touched(i, from, to); t {
				continue
			}
			c, ok := s.cert.Of(n)
			if !ok || !certs.InChain(c, s.ID()) {
				continue
			}
			hs = append(hs, held{i, c, chargedAt(&s.ref, n)})
		}
		for a := range hs {
			for b := range a {
				x, y := hs[b], hs[a]
				if !sameCertOf(x.cert, y.cert) || !certs.InChain(x.cert, w.servers[y.i].id) || !certs.InChain(y.cert, w.servers[x.i].id) {
					continue
				}
				w.pairs++
				if !slices.Equal(x.charged, y.charged) {
					return fmt.Sprintf("number %d: s%d and s%d hold its %s certificate, both in its chain, untouched since %.1fs, and charge differently: s%d %v, s%d %v",
						n, x.i, y.i, certs.KindName(x.cert.Kind), from.Sub(w.start).Seconds(), x.i, w.names(x.charged), y.i, w.names(y.charged))
				}
			}
		}
	}
	return ""
}

// TestSwarmAgreeCheck: the swarm's check finds two servers that hold the
// same certificate of a number and charge differently for it, names the
// number, and passes them once they agree.
func TestSwarmAgreeCheck(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		a, b := loneServer(t), loneServer(t)
		defer a.Close()
		defer b.Close()
		ids := []peer.ID{a.ID(), b.ID()}
		sortChain(ids)
		const n = 5
		for _, s := range []*Server{a, b} {
			for k := uint64(n - 1); k <= n+1; k++ {
				s.cert.Keep(&wire.Cert{Kind: wire.CertFinal, Number: k, Epoch: [32]byte{byte(k)}, Chain: proto.ChainIDs(ids)})
			}
		}
		long := time.Hour
		w := &swarm{t: t, start: time.Now().Add(-2 * long), p: testParams(8),
			certSeen: map[uint64]time.Time{n - 1: time.Now().Add(-long), n: time.Now().Add(-long), n + 1: time.Now().Add(-long)}}
		for _, s := range []*Server{a, b} {
			sv := &swarmServer{cfg: s.cfg, id: s.ID()}
			sv.cur.Store(s)
			w.servers = append(w.servers, sv)
		}
		a.ref.Add(chargelog.Record{Peer: b.ID().String(), Number: n, Window: 2, Key: "k"})
		msg := w.disagreement(nil)
		if !strings.Contains(msg, fmt.Sprintf("number %d: s0 and s1", n)) || !strings.Contains(msg, "[s1]") {
			t.Errorf("a charge held at s0 alone: %q", msg)
		}
		w.agreed = nil
		b.ref.Add(chargelog.Record{Peer: b.ID().String(), Number: n, Window: 2, Key: "k"})
		if msg := w.disagreement(nil); msg != "" {
			t.Errorf("the same charges at both: %q", msg)
		}
	})
}

// sameCertOf reports whether a and b are the same certificate of a number
// as far as its charges go: kind, epoch and chain.
func sameCertOf(a, b *wire.Cert) bool {
	return a.Kind == b.Kind && a.Epoch == b.Epoch && bytes.Equal(certs.ChainKey(a.Chain), certs.ChainKey(b.Chain))
}

// chargedAt is the servers charged here for number n's evidence, whether
// or not the count was taken back (a public cause is each server's own
// view, §3 "Limits"), sorted.
func chargedAt(rs *chargelog.Log, n uint64) []string {
	set := map[string]bool{}
	for _, r := range rs.Records(false) {
		if r.Number == n && r.Peer != "" {
			set[r.Peer] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// names is charged (peer ids) as the swarm's server names.
func (w *swarm) names(charged []string) []string {
	var out []string
	for _, c := range charged {
		name := c
		for j, sv := range w.servers {
			if p, err := peer.Decode(c); err == nil && p == sv.id {
				name = fmt.Sprintf("s%d", j)
			}
		}
		out = append(out, name)
	}
	return out
}
