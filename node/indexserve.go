package node

import (
	"context"
	"errors"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// Index pages served at once (each up to wire.MaxIndexPage bytes, held
// from the read until the stream ends): the index is public, so any peer
// may ask, and a flood is refused rather than queued. Peers with no slot
// here (anyone, and clients syncing from another server than their
// primary) share maxOutsiderIndex of them, in a slotTable like the
// window's, so that they cannot keep this server's own clients from
// syncing, and those of one address range (IPv4 /24, IPv6 /48) hold at
// most maxOutsiderIndexPerRange: identities are free, addresses are not,
// and 8 of one /24 held the whole share while the others waited
// (TestIndexSlotsPerRange). IPv6 /48s are free from tunnel brokers, which
// hand them out of a few /32s: those of one /32 hold at most
// maxOutsiderIndexPerWide, so that four /48s of one broker no longer hold
// every slot (TestIndexSlotsPerWideRange), and an ISP's customers, most
// often in one /32, still have half the share. Loopback peers run on
// this machine and are not capped by range (every test's clients are
// there; an operator behind a local reverse proxy loses the range caps:
// docs/operator.md). A registered client holds at most maxIndexPerClient
// pages at once (its syncs read one page at a time; `ls` may add one),
// so that one client, or a few, cannot hold every slot while the other
// clients' checkpoint syncs are refused (TestIndexSlotsPerClient). The
// clients of one range hold at most maxClientIndexPerRange, of one IPv6
// /32 maxClientIndexPerWide, as the outsiders' (loopback exempt): one /24
// may register n_max/2 first-time keys at a primary, and 16 of them,
// asking for pages and never reading them, held all 32 slots for the
// reply bound, about 2 min, again and again (TestIndexSlotsClientRange,
// TestIndexSlotsClientWideRange).
// A client counts as one from its registration on, before the admission
// order takes it or not (isClientPeer): its end check (the sync after an
// epoch's last list, its epoch ended here) may fall while its next
// registration waits for that order, and the range caps bound what
// registrations not yet admitted hold as they bound admitted ones.
const (
	maxIndexServing          = 32
	maxIndexPerClient        = 2
	maxClientIndexPerRange   = maxIndexServing / 4
	maxClientIndexPerWide    = maxIndexServing / 2
	maxOutsiderIndex         = 8
	maxOutsiderIndexPerRange = maxOutsiderIndex / 4
	maxOutsiderIndexPerWide  = maxOutsiderIndex / 2
)

// indexSlots counts the index pages in flight (all, under mu) and holds
// the outsiders' slots; servers holds those served over the epoch
// protocol to the group's servers catching up, one a server
// (onServerIndexReq).
type indexSlots struct {
	mu        sync.Mutex
	all       int
	clients   slotTable
	outsiders slotTable
	servers   serverSlots
}

// enterIndex takes a slot for a page to from; the slot is given back when
// ctx ends, that is once the reply is written or the stream's deadline
// passed. An outsider may hold several pages at once, a registered client
// maxIndexPerClient, each within its ranges' share.
func (s *Server) enterIndex(ctx context.Context, from peer.ID) error {
	outsider := !s.isClientPeer(from)
	rng, wide := s.addrRanges(from)
	if rng == "loopback" {
		rng, wide = "", ""
	}
	g := &s.indexSlots
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.all >= maxIndexServing {
		return proto.ErrIndexBusy
	}
	var release func()
	var err error
	if outsider {
		release, _, err = g.outsiders.tryTakeIn(from, maxOutsiderIndex, maxOutsiderIndex,
			slotRange{rng, maxOutsiderIndexPerRange}, slotRange{wide, maxOutsiderIndexPerWide})
	} else {
		release, _, err = g.clients.tryTakeIn(from, maxIndexServing, maxIndexPerClient,
			slotRange{rng, maxClientIndexPerRange}, slotRange{wide, maxClientIndexPerWide})
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

// Window replies served at once (window.go). Every client of an epoch
// asks every server of the chain for the same window before it registers,
// when no server counts it as one of its clients yet: in the outsiders'
// share of the index slots (8), a server refused most of the clients of
// an epoch of 32, and those that found every server busy sat the epoch
// out (TestWindowAtClientCap). Window requests have slots of their own,
// a peer one at a time, so that neither they nor index pages crowd out
// the other; a refused client asks again (fetchWindow). Peers of one
// address range (IPv4 /24, IPv6 /48, as the admission order's) hold at
// most a quarter of them, and a reply's send ends within
// Tunables.ClientReply plus a second per clientReplyRate bytes, as every
// client reply's: peers that ask and never read hold a range's share for
// seconds at a time, not the whole slot table for a poll's 10 min
// (TestWindowSlotsHeld).
const (
	maxWindowServing  = 32
	maxWindowPerRange = maxWindowServing / 4
)

// clientReplyRate is the slowest reading (bytes a second) a reply of the
// client protocols is sent at (transport.ReplyBound): a window of 0.6 MB,
// four pools of wire.MaxPoolPairs pairs with their records and
// descriptors, in 10 s on top of Tunables.ClientReply; a full index page
// (wire.IndexPageBytes) in 2 min; a rate far below a link any client has.
const clientReplyRate = 64 << 10

// The group's servers fetch windows and index pages from each other over
// the epoch protocol (a member from N's leader before it answers the
// Prepare, the leader from the chain, a server catching up), in slots of
// their own, one a server: peers with no role cannot keep a member from
// the window it must hold to sign (TestWindowSlotsHeld). The servers of
// the certified chains (certPeer: the chains of the last two
// certificates, the founders before them) are never refused for want of
// a slot: there are no more of them than maxCertServing. A server that
// is only on the roster past its probation, which any identity that said
// hello long enough is, takes one of maxRosterServing slots, at most
// maxRosterPerRange of one address range, and its reply's send ends
// within Tunables.ClientReply plus a second per clientReplyRate bytes
// (server.go): 64 such identities fill a few slots for seconds, never a
// member's (TestServerSlotsHeld).
const (
	maxCertServing    = 3 * wire.MaxServers
	maxRosterServing  = 16
	maxRosterPerRange = maxRosterServing / 4
)

// serverSlots are the epoch protocol's slots of one kind of reply: those
// of the certified chains' servers and those of the roster's others.
type serverSlots struct{ chain, roster slotTable }

// enterServer takes a slot of g for from, a server of the group
// (groupPeer), until ctx ends.
func (s *Server) enterServer(ctx context.Context, g *serverSlots, from peer.ID) error {
	if from == s.h.ID() || s.certPeer(from) {
		return g.chain.enter(ctx, from, "", maxCertServing, maxCertServing)
	}
	return g.roster.enter(ctx, from, s.addrRange(from), maxRosterServing, maxRosterPerRange)
}

// windowSlots are the client and the server window slots, and the
// would-serve questions that fetch a window (derive.go): asking holds
// those fetching, one an asker.
type windowSlots struct {
	clients, asking slotTable
	servers         serverSlots
	// asked holds, for each asker and number whose would-serve window
	// this server fetched, the asker's fetches (askedFetch): entries of
	// numbers past pruned once their fetch ended, at most 2·maxAskers.
	// said holds the questions of the next number answered yes after a
	// fetch, at most maxAskers.
	askedMu sync.Mutex
	asked   map[askKey]*asker
	said    map[[32]byte]uint64
}

// askKey is a would-serve asker and the number it asked about.
type askKey struct {
	p peer.ID
	n uint64
}

// asker is a would-serve asker's fetches for one number: whether it is a
// server of the certificate before that number, else its address range,
// the fetches it took and whether one runs.
type asker struct {
	member   bool
	rng      string
	tries    int
	fetching bool
}

// maxAskers bounds the askers of a number whose would-serve window this
// server fetches: every server of a full certificate and the roster's
// others' share (askedFetch); the asking slots hold as many.
const maxAskers = wire.MaxServers + maxRosterServing

// wouldServeFetches is an asker's budget of would-serve window fetches
// for one number: a fetch that failed, or a later attempt that pins
// another window, has one more (each reply capped at maxLookbackWindow).
const wouldServeFetches = 2

// slotTable holds the peers whose reply is being read and sent (window
// replies, index pages of outsiders), each slot counted in its address
// ranges, and given back with them.
type slotTable struct {
	mu      sync.Mutex
	n       int
	by      map[peer.ID]int
	inRange map[string]int
	freed   chan struct{} // closed when a slot is given back (takeWait)
}

// slotRange is an address range a slot counts in ("": none) and the most
// slots one such range holds at once.
type slotRange struct {
	name string
	max  int
}

// take takes a slot for from of range rng until release: at most total at
// once, of them perRange of one range, one a peer; else errWindowBusy.
func (g *slotTable) take(from peer.ID, rng string, total, perRange int) (release func(), err error) {
	release, _, err = g.tryTake(from, rng, total, perRange)
	return release, err
}

// tryTake is take; when it fails, freed is closed once a slot is given
// back (taken under the same lock, so that no release falls between).
func (g *slotTable) tryTake(from peer.ID, rng string, total, perRange int) (release func(), freed <-chan struct{}, err error) {
	return g.tryTakeIn(from, total, 1, slotRange{rng, perRange})
}

// tryTakeIn is tryTake with perPeer slots a peer, counted in each of rs.
func (g *slotTable) tryTakeIn(from peer.ID, total, perPeer int, rs ...slotRange) (release func(), freed <-chan struct{}, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	full := g.by[from] >= perPeer || g.n >= total
	for _, r := range rs {
		full = full || (r.name != "" && g.inRange[r.name] >= r.max)
	}
	if full {
		if g.freed == nil {
			g.freed = make(chan struct{})
		}
		return nil, g.freed, proto.ErrWindowBusy
	}
	if g.by == nil {
		g.by, g.inRange = map[peer.ID]int{}, map[string]int{}
	}
	g.n++
	g.by[from]++
	for _, r := range rs {
		if r.name != "" {
			g.inRange[r.name]++
		}
	}
	return func() {
		g.mu.Lock()
		g.n--
		if g.by[from]--; g.by[from] <= 0 {
			delete(g.by, from)
		}
		for _, r := range rs {
			if r.name == "" {
				continue
			}
			if g.inRange[r.name]--; g.inRange[r.name] <= 0 {
				delete(g.inRange, r.name)
			}
		}
		if g.freed != nil {
			close(g.freed)
			g.freed = nil
		}
		g.mu.Unlock()
	}, nil, nil
}

// held is how many slots of g are held.
func (g *slotTable) held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// takeWait is take, waiting for a slot given back until ctx ends.
func (g *slotTable) takeWait(ctx context.Context, from peer.ID, rng string, total, perRange int) (func(), error) {
	for {
		release, freed, err := g.tryTake(from, rng, total, perRange)
		if err == nil {
			return release, nil
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, err
		}
	}
}

// enter is take until ctx ends (the reply written or the stream's
// deadline passed).
func (g *slotTable) enter(ctx context.Context, from peer.ID, rng string, total, perRange int) error {
	release, err := g.take(from, rng, total, perRange)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		release()
	}()
	return nil
}

// enterWindow takes a client window slot for from, of address range rng.
func (ws *windowSlots) enterWindow(ctx context.Context, from peer.ID, rng string) error {
	return ws.clients.enter(ctx, from, rng, maxWindowServing, maxWindowPerRange)
}

// onIndexReq answers one page of the index changes logged after the
// request's cursor (§7 v3). Any peer may ask: the index is public, and
// what one page costs is bounded by its fixed-size request (clientCaps),
// the page budget wire.IndexPageBytes and the slots above; the stream's
// deadline bounds the send. A cursor beyond the log gets an empty page
// ending at the log's end.
func (s *Server) onIndexReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.IndexReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := s.enterIndex(ctx, from); err != nil {
		return 0, nil, err
	}
	return s.indexReply(ctx, from, req.Cursor)
}

// onServerIndexReq answers, over the epoch protocol, a server of the
// group catching up (catchupFrom) with the page onIndexReq would give. It
// takes none of the clients' index slots, whose outsiders' share any
// peer may hold, so that such peers cannot keep a server from the
// records it lacks; a peer outside the group is refused before the
// request is parsed, and a server has one page at a time.
func (s *Server) onServerIndexReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	if !s.groupPeer(from) {
		return 0, nil, errors.New("node: index requests on the epoch protocol only from the group's servers")
	}
	var req wire.IndexReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := s.enterServer(ctx, &s.indexSlots.servers, from); err != nil {
		return 0, nil, err
	}
	return s.indexReply(ctx, from, req.Cursor)
}

// indexReply is the index page after cursor, to from.
func (s *Server) indexReply(ctx context.Context, from peer.ID, cursor uint64) (wire.Type, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	budget := wire.IndexPageBytes
	if p := s.hookIndexPage(); p > 0 {
		budget = p
	}
	ch, err := s.store.IndexSince(cursor, budget)
	if err != nil {
		return 0, nil, err
	}
	ch.Manifests = s.hookIndexReply(from, ch.Manifests)
	ch.Closings = s.hookIndexClosings(from, ch.Closings)
	return wire.TypeIndex, indexPage(ch).Marshal(), nil
}

// indexPage is a page of store changes as sent.
func indexPage(ch store.IndexChanges) *wire.Index {
	p := &wire.Index{Next: ch.Next, More: ch.More, Entries: indexToWire(ch.Entries)}
	for _, m := range ch.Manifests {
		p.Manifests = append(p.Manifests, m.Data)
	}
	p.Removed = append(p.Removed, ch.Removed...)
	p.Closings = ch.Closings
	return p
}
