// Package slots bounds the replies a server sends at once to peers that
// ask for public data (docs/protocol.md §6.3 v3, §7 v3; docs/proto-node.md
// "Hostile peers and crashes"): index pages, windows and the would-serve
// questions' window fetches. Each kind has a table of slots, a peer's
// share and an address range's, so that peers that ask and never read
// hold a share, never the whole table, and so that peers with no role
// keep neither a server's own clients nor the group's servers from what
// they need. A slot is held until the reply is written or the stream's
// deadline passed. Every table has its own leaf lock and does no I/O;
// package node says who a peer is (a client, a server of a certified
// chain, its address ranges) and enters each reply.
package slots

import (
	"context"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Index pages served at once (each up to wire.MaxIndexPage bytes, held
// from the read until the stream ends): the index is public, so any peer
// may ask, and a flood is refused rather than queued. Peers with no slot
// here (anyone, and clients syncing from another server than their
// primary) share MaxOutsiderIndex of them, in a Table like the
// window's, so that they cannot keep this server's own clients from
// syncing, and those of one address range (IPv4 /24, IPv6 /48) hold at
// most MaxOutsiderIndexPerRange: identities are free, addresses are not,
// and 8 of one /24 held the whole share while the others waited
// (TestIndexSlotsPerRange). IPv6 /48s are free from tunnel brokers, which
// hand them out of a few /32s: those of one /32 hold at most
// MaxOutsiderIndexPerWide, so that four /48s of one broker no longer hold
// every slot (TestIndexSlotsPerWideRange), and an ISP's customers, most
// often in one /32, still have half the share. Loopback peers run on
// this machine and are not capped by range (every test's clients are
// there; an operator behind a local reverse proxy loses the range caps:
// docs/operator.md). A registered client holds at most MaxIndexPerClient
// pages at once (its syncs read one page at a time; `ls` may add one),
// so that one client, or a few, cannot hold every slot while the other
// clients' checkpoint syncs are refused (TestIndexSlotsPerClient). The
// clients of one range hold at most MaxClientIndexPerRange, of one IPv6
// /32 MaxClientIndexPerWide, as the outsiders' (loopback exempt): one /24
// may register n_max/2 first-time keys at a primary, and 16 of them,
// asking for pages and never reading them, held all 32 slots for the
// reply bound, about 2 min, again and again (TestIndexSlotsClientRange,
// TestIndexSlotsClientWideRange).
// A client counts as one from its registration on, before the admission
// order takes it or not (peers.Who.Client): its end check (the sync
// after an epoch's last list, its epoch ended here) may fall while its
// next registration waits for that order, and the range caps bound what
// registrations not yet admitted hold as they bound admitted ones.
const (
	MaxIndexServing          = 32
	MaxIndexPerClient        = 2
	MaxClientIndexPerRange   = MaxIndexServing / 4
	MaxClientIndexPerWide    = MaxIndexServing / 2
	MaxOutsiderIndex         = 8
	MaxOutsiderIndexPerRange = MaxOutsiderIndex / 4
	MaxOutsiderIndexPerWide  = MaxOutsiderIndex / 2
)

// Loopback is the address range of a peer on this machine (as
// intake.IPRange names it), capped by no range.
const Loopback = "loopback"

// Index counts the index pages in flight (all, under mu) and holds
// the clients' and the outsiders' slots; Servers holds those served over
// the epoch protocol to the group's servers catching up, one a server
// (node's onServerIndexReq).
type Index struct {
	mu        sync.Mutex
	all       int
	Clients   Table
	Outsiders Table
	Servers   Servers
}

// Enter takes a slot for a page to from, a registered client of this
// server or not, of address ranges rng and wide; the slot is given back
// when ctx ends, that is once the reply is written or the stream's
// deadline passed. An outsider may hold several pages at once, a
// registered client MaxIndexPerClient, each within its ranges' share.
func (g *Index) Enter(ctx context.Context, from peer.ID, client bool, rng, wide string) error {
	if rng == Loopback {
		rng, wide = "", ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.all >= MaxIndexServing {
		return proto.ErrIndexBusy
	}
	var release func()
	var err error
	if !client {
		release, _, err = g.Outsiders.TryTakeIn(from, MaxOutsiderIndex, MaxOutsiderIndex,
			Range{rng, MaxOutsiderIndexPerRange}, Range{wide, MaxOutsiderIndexPerWide})
	} else {
		release, _, err = g.Clients.TryTakeIn(from, MaxIndexServing, MaxIndexPerClient,
			Range{rng, MaxClientIndexPerRange}, Range{wide, MaxClientIndexPerWide})
	}
	if err != nil {
		return proto.ErrIndexBusy
	}
	g.all++
	go func() {
		<-ctx.Done()
		g.mu.Lock()
		g.all--
		g.mu.Unlock()
		release()
	}()
	return nil
}

// Add counts n more pages in flight (n < 0: fewer), held by nobody: the
// tests fill or free every slot at once.
func (g *Index) Add(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.all += n
}

// All is how many pages are in flight.
func (g *Index) All() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.all
}

// Window replies served at once (package window's Service). Every client of an
// epoch asks every server of the chain for the same window before it
// registers, when no server counts it as one of its clients yet: in the
// outsiders' share of the index slots (8), a server refused most of the
// clients of an epoch of 32, and those that found every server busy sat
// the epoch out (TestWindowAtClientCap). Window requests have slots of
// their own, a peer one at a time, so that neither they nor index pages
// crowd out the other; a refused client asks again (fetchWindow). Peers
// of one address range (IPv4 /24, IPv6 /48, as the admission order's)
// hold at most a quarter of them, and a reply's send ends within
// Tunables.ClientReply plus a second per clientReplyRate bytes, as every
// client reply's: peers that ask and never read hold a range's share for
// seconds at a time, not the whole slot table for a poll's 10 min
// (TestWindowSlotsHeld).
const (
	MaxWindowServing  = 32
	MaxWindowPerRange = MaxWindowServing / 4
)

// The group's servers fetch windows and index pages from each other over
// the epoch protocol (a member from N's leader before it answers the
// Prepare, the leader from the chain, a server catching up), in slots of
// their own, one a server: peers with no role cannot keep a member from
// the window it must hold to sign (TestWindowSlotsHeld). The servers of
// the certified chains (members.Chains.CertPeer: the chains of the last two
// certificates, the founders before them) are never refused for want of
// a slot: there are no more of them than MaxCertServing. A server that
// is only on the roster past its probation, which any identity that said
// hello long enough is, takes one of MaxRosterServing slots, at most
// MaxRosterPerRange of one address range, and its reply's send ends
// within Tunables.ClientReply plus a second per clientReplyRate bytes
// (node's server.go): 64 such identities fill a few slots for seconds,
// never a member's (TestServerSlotsHeld).
const (
	MaxCertServing    = 3 * wire.MaxServers
	MaxRosterServing  = 16
	MaxRosterPerRange = MaxRosterServing / 4
)

// Servers are the epoch protocol's slots of one kind of reply: those
// of the certified chains' servers and those of the roster's others.
type Servers struct{ Chain, Roster Table }

// Enter takes a slot of g for from, a server of the group, until ctx
// ends: chain says it is this server or one of a certified chain, rng is
// its address range.
func (g *Servers) Enter(ctx context.Context, from peer.ID, chain bool, rng string) error {
	if chain {
		return g.Chain.Enter(ctx, from, "", MaxCertServing, MaxCertServing)
	}
	return g.Roster.Enter(ctx, from, rng, MaxRosterServing, MaxRosterPerRange)
}
