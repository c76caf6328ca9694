package evidence

import (
	"bytes"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
)

// A server down (§3): one server's view that a peer left is no evidence.
// A server whose probe of a chain server failed ends the epoch with a
// signed abort saying so (wire.AbortDown), carrying the chain's signed
// attestations of it (GatherDown); an abort that more than half of the
// others back charges the server down, without blame, and is the public
// cause that takes back the epoch's other counts at every server.

// Down is what an epoch holds here of its servers down: the positions
// whose probe failed while it was held (Probed), this server's signed
// attestation that a server was down, one a position, and the signed
// aborts saying so seen here (a few a position), which it adds its
// attestation to once its probe fails. Under the server's lock.
type Down struct {
	probed uint64
	attest map[int]*wire.Attest
	aborts map[int][][]byte
}

// Probed notes that this server's probe of chain position j failed.
func (d *Down) Probed(j int) {
	if j < 64 {
		d.probed |= 1 << uint(j)
	}
}

// Attested is this server's attestation that position j was down, if it
// signed one.
func (d *Down) Attested(j int) *wire.Attest { return d.attest[j] }

// maxDownAborts bounds the down aborts kept a position: one a signer of
// an honest chain would do, m_max.
const maxDownAborts = 8

// noteAbort keeps a signed abort of a chain of m saying a server was down
// (a few a position) and reports whether it is kept.
func (d *Down) noteAbort(a *wire.Abort, m int) bool {
	j, b := int(a.Round), a.Marshal()
	if j >= m {
		return false
	}
	for _, x := range d.aborts[j] {
		if bytes.Equal(x, b) {
			return true
		}
	}
	if len(d.aborts[j]) >= maxDownAborts {
		return false
	}
	if d.aborts == nil {
		d.aborts = map[int][][]byte{}
	}
	d.aborts[j] = append(d.aborts[j], b)
	return true
}

// Backed reports whether ev's attestations (not checked here) say
// position j lacking at more than half of the m − 1 other servers.
func Backed(ev *wire.Charge, m, j int) bool {
	n := 0
	for i, bits := range blame.AttestedLacking(ev.Attests) {
		if int(i) != j && bits&(1<<uint(j)) != 0 {
			n++
		}
	}
	return 2*n > m-1
}

// GatherDown ends ep for everyone with a signed abort saying that the
// server at chain position j was down, carrying the chain's signed
// attestations of it. It asks the chain's other servers until more than
// half of them attest the server down, which charges it; after twice the
// probe without that backing it signs anyway (charged to itself while no
// majority backs it), unless another server's abort ended ep meanwhile.
// Without the server's lock.
func (s *Service) GatherDown(ep *Ep, j int) {
	v := ep.V
	p := v.Chain[j]
	reason := "server " + p.ShortString() + " left"
	// The others' probes began as this one's did: past twice the probe,
	// the rest of the chain would meanwhile charge this server's
	// absence. Later attestations still back the abort (AttestDown).
	deadline := time.Now().Add(2*s.Probe + s.AbortSettle)
	var got []wire.Attest
	backed := false
	for {
		s.h.Locked(func() {
			if own := s.DownAttest(ep, j); own != nil {
				got = append(got, *own)
			}
		})
		got = append(got, s.h.AskAttests(ep, wire.AbortDown, uint32(j), p)...)
		ev := &wire.Charge{Kind: wire.EvAbort, Number: v.Desc.Number}
		blame.MergeAttests(ev, got)
		got = ev.Attests
		if backed = Backed(ev, len(v.Chain), j); backed || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-s.Ctx.Done():
			return
		case <-time.After(max(s.Probe/2, 100*time.Millisecond)):
		}
	}
	s.h.Locked(func() {
		if !backed && s.Ref.AbortedByOther(v.ID, s.Self) {
			return // its end was another's (the settle rule, aborts.go)
		}
		s.SendBacked(s.h.Now(ep), wire.AbortDown, uint32(j), reason, got)
	})
}

// AttestDown adds this server's attestation that p was down to the
// evidence of every abort of ep saying so seen here before its own probe
// of p failed, and relays it: the abort's backing does not hang on which
// server's probe ended first. Call with the server's lock held.
func (s *Service) AttestDown(ep *Ep, p peer.ID) {
	v := ep.V
	for j, q := range v.Chain {
		if q != p || len(ep.Down.aborts[j]) == 0 {
			continue
		}
		own := s.DownAttest(ep, j)
		if own == nil {
			return
		}
		for _, item := range ep.Down.aborts[j] {
			s.NoteCharge(ep, &wire.Charge{Kind: wire.EvAbort, Number: v.Desc.Number, Item: item, Attests: []wire.Attest{*own}}, nil, "")
		}
	}
}

// AskedDown is DownAttest for another server's request (GatherDown's):
// given only once this server's own probe of that server failed while it
// held ep, or while it holds an abort saying it was down. Answered at any
// moment it was not live here, it let a server collect attestations of a
// lapse that ended no epoch and sign a backed abort later, with the
// server live again (rev42b G5). Call with the server's lock held.
func (s *Service) AskedDown(ep *Ep, j int) *wire.Attest {
	if j < 0 || j >= 64 || ep.Down.probed&(1<<uint(j)) == 0 && len(ep.Down.aborts[j]) == 0 {
		return nil
	}
	return s.DownAttest(ep, j)
}

// DownAttest is this server's signed attestation that the server at
// chain position j of ep was down: signed once that server is not live
// here (its probe failed), the answer ever after; nil before. Once ep
// ended here, only an outage that began before its end is attested: no
// hello since, and if the server is forgotten here, not live at the end.
// A later outage, a restart, says nothing of the epoch, and attested it
// moved an unbacked down abort onto that server
// (TestLateOutageNotAttested). Call with the server's lock held.
func (s *Service) DownAttest(ep *Ep, j int) *wire.Attest {
	v := ep.V
	if j < 0 || j >= len(v.Chain) || v.Chain[j] == s.Self {
		return nil
	}
	if a := ep.Down.attest[j]; a != nil {
		return a
	}
	p := v.Chain[j]
	if s.h.InRoster(p) {
		return nil
	}
	if ended, at, liveAtEnd := s.h.EndOf(ep); ended {
		seen, known := s.h.LastSeen(p)
		if known && seen.After(at) || !known && liveAtEnd&(1<<uint(j)) != 0 {
			return nil
		}
	}
	a := s.h.SignAttest(ep, wire.AbortDown, uint32(j), 1<<uint(j))
	if a != nil {
		if ep.Down.attest == nil {
			ep.Down.attest = map[int]*wire.Attest{}
		}
		ep.Down.attest[j] = a
	}
	return a
}
