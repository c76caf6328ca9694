// Package members is who serves with a server (docs/protocol.md §3 v3,
// "Who may serve", "Epoch numbers and leaders"): the chain it orders from
// its roster for a number, the group chain the leader rotation runs over,
// the chain derived from the certificate of the number before (whose
// leader every server checks a Prepare's sender against), and whether a
// peer is a server of the group.
//
// Chains is the type. It has no state and no lock of its own: the
// roster (package roster), who may serve (package eligible) and the
// certificates (package certs) keep theirs under their own locks, and
// the round blames' culprits, the refusal budget and the last number
// signed stay the server's, read through Host. It does no I/O and takes
// no server lock: never call it with one held that Host takes.
package members

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/eligible"
	"github.com/riffle-net/riffle/node/internal/roster"
)

// Host is what Chains reads of the server.
type Host interface {
	Self() peer.ID
	// Excluded reports whether a round blame named server p.
	Excluded(p peer.ID) bool
	// OutAt reports whether p is out for its refusal budget at number n.
	OutAt(p peer.ID, n uint64) bool
	// LastNumber is the highest epoch number this server signed.
	LastNumber() uint64
}

// Certs is what Chains reads of the certificates kept (package certs's
// Certs).
type Certs interface {
	Top() uint64
	Next() uint64
	Of(n uint64) (*wire.Cert, bool)
	// Group is the group certified for number n.
	Group(n uint64) (map[peer.ID]bool, bool)
}

// Chains is a server's view of who serves with it.
type Chains struct {
	H      Host
	Roster *roster.Table
	Who    *eligible.Table
	Certs  Certs
	// Min is --min-servers: a server out for its refusal budget stays in
	// a chain that would fall below it without it.
	Min int
}

// Chain returns the live servers and this one in chain order, the
// excluded left out and those out for their refusal budget while enough
// remain (roster.Chain), for the next number.
func (c *Chains) Chain() []peer.ID { return c.At(c.Certs.Next()) }

// At is Chain for number n: those out for their budget at n left out.
func (c *Chains) At(n uint64) []peer.ID {
	out := func(p peer.ID) bool { return c.H.OutAt(p, n) }
	return roster.Chain(c.H.Self(), c.Roster.Live(), c.H.Excluded, out, c.Min)
}

// Eligible says why p may not be in the next number's chain that this
// server joins, or nil.
func (c *Chains) Eligible(p peer.ID) error { return c.EligibleAt(p, c.Certs.Next()) }

// EligibleAt is Eligible for number n's chain.
func (c *Chains) EligibleAt(p peer.ID, n uint64) error {
	return c.Who.Check(c.H.Self(), p, n, true)
}

// EligibleIn is EligibleAt for the chain of a Prepare of n whose previous
// certificate has chain prev (eligible.Table.CheckPrev).
func (c *Chains) EligibleIn(p peer.ID, n uint64, prev [][]byte) error {
	return c.Who.CheckPrev(c.H.Self(), p, n, true, prev)
}

// Candidates are the candidates a leader records in n's Prepare over
// chain (§3, "Who may serve"): live roster servers outside chain, not
// blamed, that no certificate of the probation window holds in its chain
// or records as a candidate, in eligible.Order (never recorded first,
// then the first sighted), at most wire.MaxCands, sorted. Every honest leader records them, so a leader
// that leaves one out delays its probation by its own turn only.
func (c *Chains) Candidates(n uint64, chain []peer.ID) [][]byte {
	if c.Who.Probation() == 0 {
		return nil // nobody waits
	}
	in := map[peer.ID]bool{c.H.Self(): true}
	for _, p := range chain {
		in[p] = true
	}
	var ids []peer.ID
	for _, m := range c.Roster.Live() {
		if in[m.ID] || c.H.Excluded(m.ID) {
			continue
		}
		if inChain, candAt := c.Who.Recorded(m.ID, n); inChain || candAt != 0 {
			continue
		}
		ids = append(ids, m.ID)
	}
	c.Who.Order(ids)
	ids = ids[:min(len(ids), wire.MaxCands)]
	roster.SortChain(ids)
	if len(ids) == 0 {
		return nil
	}
	out := make([][]byte, len(ids))
	for i, p := range ids {
		out[i] = []byte(p)
	}
	return out
}

// Group is the chain by the group's rules alone (the operator's pins left
// aside), for the next number: the chain the leader rotation runs over,
// so that servers with different pins agree on the leaders.
func (c *Chains) Group() []peer.ID { return c.GroupAt(c.Certs.Next()) }

// GroupAt is Group for number n.
func (c *Chains) GroupAt(n uint64) []peer.ID {
	return c.Who.Filter(c.H.Self(), c.At(n), n, false)
}

// Derived is the chain of the number after prev's, in chain order: the
// group chain joined with the live servers of prev's chain that are
// neither blamed nor out for their refusal budget (a server of the last
// certified chain serves no probation anywhere).
func (c *Chains) Derived(prev *wire.Cert) []peer.ID {
	if prev == nil || prev.Kind == wire.CertNone {
		return c.Group()
	}
	n := prev.Number + 1
	ids := c.GroupAt(n)
	have := map[peer.ID]bool{}
	for _, p := range ids {
		have[p] = true
	}
	live := map[peer.ID]bool{}
	for _, p := range c.At(n) {
		live[p] = true
	}
	for _, b := range prev.Chain {
		p := peer.ID(b)
		if !have[p] && live[p] && !c.H.OutAt(p, n) {
			have[p] = true
			ids = append(ids, p)
		}
	}
	roster.SortChain(ids)
	return ids
}

// Taken is Derived from the certificate of n−1 kept here.
func (c *Chains) Taken(n uint64) []peer.ID {
	if n > 1 {
		if ct, ok := c.Certs.Of(n - 1); ok {
			return c.Derived(ct)
		}
	}
	return c.Group()
}

// GroupPeer reports whether p is a server of the group here: of a
// certified chain (CertPeer), or a live roster server, not blamed, past
// its probation (eligible for a chain by the group's rules). A peer that
// only said hello as a server is neither.
func (c *Chains) GroupPeer(p peer.ID) bool {
	if p == c.H.Self() || c.CertPeer(p) {
		return true
	}
	if c.Roster.Get(p) == nil || c.H.Excluded(p) {
		return false
	}
	return c.Who.Check(c.H.Self(), p, c.Certs.Next(), false) == nil
}

// CertPeer reports whether p, not named by a round blame, is in a chain
// certified here: that of the last certificate kept (the group of the next
// number) or of the one before it, or the founders while those are the
// group (no certificate, or only number 1's).
func (c *Chains) CertPeer(p peer.ID) bool {
	if c.H.Excluded(p) {
		return false
	}
	top := c.Certs.Top()
	for _, n := range []uint64{top + 1, top} {
		if n == 0 {
			continue
		}
		if g, ok := c.Certs.Group(n); ok && g[p] {
			return true
		}
	}
	return false
}
