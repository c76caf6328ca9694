// Package catchup is a server's catch-up (docs/protocol.md §7 v3). A
// server left out of an epoch's chain (a
// partition, lossy links, a crash) holds nothing the epoch published, so
// a client whose primary it is could never sync those files' manifests
// nor fetch their chunks through it. In the background it brings its
// store up to date from the other servers of the group, taking nothing on
// one server's word:
//
//  1. it reads the index log of each roster server of its group, page by
//     page from a cursor kept per peer in its store (the client's IndexReq
//     and pages, over the epoch protocol: IndexPage), for the closing
//     records it lacks;
//  2. it takes a closing record only for an epoch whose final certificate
//     it holds (package certs: signed by every chain server, checked when
//     taken; those of the epochs it skipped are fetched first, fillCerts)
//     and only with a valid signature of every server of that
//     certificate's chain;
//  3. for each round the record states published it asks for the round's
//     final request list (ListReq) and takes it only if it hashes to the
//     digest the record carries;
//  4. it fetches the list's published ids it lacks by GetChunk, each body
//     checked against its id (SHA-256), and indexes the list's manifest
//     ids as publication does, the index entries of the roots built here
//     from the manifests' own bytes; then it keeps the closing record,
//     which marks the epoch done;
//  5. an epoch that a whole pass found no record of (a chain server
//     killed at its end leaves it without one) is taken from its rounds'
//     final lists (the R of its own descriptor), each only with the
//     signature of every chain server (catchupLists), and stays
//     lacking until its record comes or it is given up.
//
// This suffices: the closing record and each list it names carry the
// signature of every chain server of the epoch, so one honest chain
// server vouches for every id taken, and every byte taken hashes to one of
// them; a peer can withhold, never forge. Index entries and manifest
// bytes in the pages are not used: what the index takes follows from the
// signed lists alone, exactly what every chain server indexed.
//
// A peer whose reply is malformed or fails a check is left alone for
// Tunables.CatchupShun (shun.go); an epoch that no peer completes is given up after
// catchupTries passes. Passes run at each new certificate and every
// Tunables.CatchupEvery, paced by Tunables.CatchupGap (the rate bound),
// without the server's mutex, one request at a time.
//
// Catchup has its own lock, never held with the server's: it asks the
// server (Server) for its certificates, roster and running epochs, and
// does its I/O through Server.Call and the store.
package catchup

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/manifests"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

const (
	// catchupPages bounds the index pages read from one peer in a pass.
	catchupPages = 64
	catchupTries = 8
	// Recent: the newest certified numbers, whose epochs may still
	// run or wait for their closing record, are left for later passes.
	Recent = 2
	// Window bounds the numbers below the newest certified one
	// that the catch-up looks back over.
	Window = 256
)

// certPages bounds the certificate pages read from one peer in a pass,
// as the certificate sync does.
const certPages = 8

// Server is what the catch-up asks of the server it runs in.
type Server interface {
	Self() peer.ID
	// Chain is the live servers in chain order, this one included.
	Chain() []peer.ID
	// Known reports whether p is on the roster.
	Known(p peer.ID) bool
	// Running reports whether epoch id runs here.
	Running(id [32]byte) bool
	// EpochRounds is R of the certified descriptor of epoch id, number
	// n: held here, else asked of srcs, checked against id.
	EpochRounds(ctx context.Context, n uint64, id [32]byte, srcs []peer.ID) (uint32, bool)
	// Certs returns the newest certified number and the certificates
	// kept of the window numbers below it and it.
	Certs(window uint64) (top uint64, certs map[uint64][]byte)
	// MissingCert is the lowest number of the window, but the newest
	// recent, whose certificate lacks here (MissingCert).
	MissingCert(recent uint64) (uint64, bool)
	CertTop() uint64
	// CheckCert verifies a certificate against the group certified for
	// its number; KeepCert keeps one that verified.
	CheckCert(c *wire.Cert) error
	KeepCert(c *wire.Cert) bool
	// SyncCerts is the certificate sync from p; whole: p gave all it has.
	SyncCerts(ctx context.Context, p peer.ID) (got, answered, whole bool)
	// Call is one request to p and its reply.
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
}

// Store is the part of the server's chunk store the catch-up writes.
type Store interface {
	CatchupCursor(peer []byte) (uint64, error)
	PutCatchupCursor(peer []byte, n uint64) error
	Closing(epoch [32]byte) ([]byte, error)
	PutClosing(epoch [32]byte, rec []byte) error
	List(epoch [32]byte, round uint32) ([]byte, error)
	HasChunk(id [32]byte) (bool, error)
	GetChunk(id [32]byte) ([]byte, error)
	PutChunks(chunks []store.Chunk) error
	PutManifests(mans []store.Manifest, index []store.IndexEntry) error
}

// Catchup is the catch-up and its memory; mu is a leaf lock.
type Catchup struct {
	Srv Server
	St  Store
	Log *slog.Logger
	T   *proto.Tunables // the server's, read at each use

	mu    sync.Mutex
	poke  chan struct{}
	shun  map[peer.ID]time.Time
	tries map[[32]byte]int // passes that left an epoch incomplete
	// listed: the rounds of an epoch without a closing record taken
	// from their lists (catchupLists), pruned with tries.
	listed map[[32]byte]map[uint32]bool
	// rounds: R of those epochs' descriptors, pruned with listed.
	rounds map[[32]byte]uint32
}

// errForged marks a reply that fails a check: its sender misbehaves.
var errForged = errors.New("node: catch-up: forged or malformed reply")

// Init readies the catch-up of srv (a zero Catchup's Poke does nothing).
func (cu *Catchup) Init(srv Server, st Store, log *slog.Logger, t *proto.Tunables) {
	cu.Srv, cu.St, cu.Log, cu.T, cu.poke = srv, st, log, t, make(chan struct{}, 1)
}

// Poke starts a pass soon (a new certificate: an epoch this server
// missed may be closed).
func (cu *Catchup) Poke() {
	select {
	case cu.poke <- struct{}{}:
	default:
	}
}

// Loop runs a pass at each Poke and every Tunables.CatchupEvery until ctx
// ends.
func (cu *Catchup) Loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-cu.poke:
		case <-time.After(cu.T.CatchupEvery):
		}
		cu.Pass(ctx)
	}
}

// Lacking returns the certified final epochs of the catch-up window,
// but those running here, whose closing record this server lacks and has
// not given up on, with their chains; old holds those of them certified
// Recent numbers before the newest, whose records are due.
func (cu *Catchup) Lacking() (want map[[32]byte][]peer.ID, old map[[32]byte]bool) {
	want, old, _ = cu.lackingAll()
	return want, old
}

// lackingAll is lacking, with every epoch of a final certificate of the
// catch-up window.
func (cu *Catchup) lackingAll() (want map[[32]byte][]peer.ID, old, certified map[[32]byte]bool) {
	top, bs := cu.Srv.Certs(Window)
	want, old = map[[32]byte][]peer.ID{}, map[[32]byte]bool{}
	certified = map[[32]byte]bool{}
	for n, b := range bs {
		var c wire.Cert
		if c.Unmarshal(b) != nil || c.Kind != wire.CertFinal {
			continue
		}
		certified[c.Epoch] = true
		if _, err := cu.St.Closing(c.Epoch); err == nil {
			continue
		}
		if cu.Srv.Running(c.Epoch) {
			continue // its own closing record comes (closing.go)
		}
		var chain []peer.ID
		for _, q := range c.Chain {
			if p, err := peer.IDFromBytes(q); err == nil {
				chain = append(chain, p)
			}
		}
		if len(chain) == len(c.Chain) {
			want[c.Epoch] = chain
			if n+Recent <= top {
				old[c.Epoch] = true
			}
		}
	}
	cu.mu.Lock()
	for id, n := range cu.tries {
		if !certified[id] {
			delete(cu.tries, id) // its certificate is gone
		} else if n >= catchupTries {
			delete(want, id)
			delete(old, id)
		}
	}
	for id := range cu.listed {
		if !certified[id] {
			delete(cu.listed, id)
		}
	}
	for id := range cu.rounds {
		if !certified[id] {
			delete(cu.rounds, id)
		}
	}
	cu.mu.Unlock()
	return want, old, certified
}

// catchupPass reads the roster servers' index logs until every lacking
// epoch is done. It runs only when a due record lacks; it takes any
// lacking one it finds, since the cursors move past what they read.
func (cu *Catchup) Pass(ctx context.Context) {
	peers := cu.Srv.Chain()
	for _, p := range peers {
		if _, gap := cu.Srv.MissingCert(Recent); !gap || ctx.Err() != nil {
			break
		}
		if p != cu.Srv.Self() && !cu.Shunned(p) {
			cu.fillCerts(ctx, p, Recent)
		}
	}
	want, old := cu.Lacking()
	if len(old) == 0 {
		return
	}
	for _, p := range peers {
		if len(want) == 0 || ctx.Err() != nil {
			break
		}
		if p != cu.Srv.Self() && !cu.Shunned(p) {
			cu.From(ctx, p, want)
		}
	}
	// An epoch that a pass already found no closing record of is taken
	// from its rounds' lists: a chain server that fails at the epoch's
	// end leaves it without a record for good (§5.2), though every list
	// it signed is still signed by the whole chain.
	for id, chain := range want {
		cu.mu.Lock()
		tried := cu.tries[id] > 0
		cu.mu.Unlock()
		if old[id] && tried && ctx.Err() == nil {
			cu.catchupLists(ctx, peers, id, chain)
		}
	}
	cu.mu.Lock()
	if cu.tries == nil {
		cu.tries = map[[32]byte]int{}
	}
	for id := range want {
		if !old[id] {
			continue
		}
		if cu.tries[id]++; cu.tries[id] == catchupTries {
			cu.Log.Warn("catch-up: epoch given up", "epoch", fmt.Sprintf("%x", id[:6]))
		}
	}
	cu.mu.Unlock()
}

// MissingCert returns the lowest number of the catch-up window below
// top, but the newest recent, whose certificate has reports lacking.
func MissingCert(top, recent uint64, has func(uint64) bool) (uint64, bool) {
	for n := max(1, top+1-min(top, Window)); n+recent <= top; n++ {
		if !has(n) {
			return n, true
		}
	}
	return 0, false
}

// fillCerts fetches from p the certificates missing in the catch-up
// window and keeps those that verify (package certs): a server that moved on by
// a later epoch's certificate (a Prepare carries it) skipped those of the
// epochs it was out of, which the catch-up checks their records against.
func (cu *Catchup) fillCerts(ctx context.Context, p peer.ID, recent uint64) {
	for range certPages {
		from, gap := cu.Srv.MissingCert(recent)
		if !gap {
			return
		}
		rep, err := cu.Srv.Call(ctx, p, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeCertReq, Body: (&wire.CertReq{From: from}).Marshal(), Timeout: transport.ShortTimeout})
		if err != nil {
			return
		}
		var page wire.Certs
		if err := page.Unmarshal(rep); err != nil {
			cu.shunPeer(p, err)
			return
		}
		took := false
		for i := range page.Certs {
			c := &page.Certs[i]
			if c.Number < from || c.Number > cu.Srv.CertTop() {
				continue
			}
			if err := cu.Srv.CheckCert(c); err != nil {
				cu.Log.Info("catch-up: certificate refused", "peer", p.ShortString(), "err", err)
				continue
			}
			took = cu.Srv.KeepCert(c) || took
		}
		if !took {
			return
		}
	}
}

// catchupFrom reads p's index log after this server's cursor there and
// completes each epoch of want whose closing record it finds, deleting it
// from want. The cursor moves past a page only once each wanted epoch of
// the page is done, so an epoch that fails is tried again from there.
//
// A record this server lacks of an epoch it does not want may be one it
// will want: an epoch whose certificate it has not yet taken (after a
// restart or a partition its certificates lag while the sync runs, and
// a Prepare moves it past numbers it never saw), or one still running
// here. Passed over, it would never be read again from p (the swarm's
// seed 3: a server restarted after 36 s down read every peer's log before
// they took it back into their rosters, so before any would give it a
// certificate, and gave up every epoch it had missed). So, once a page,
// the certificates are first brought up to p's (a server logs a closing
// record only of an epoch whose final certificate it keeps): a record
// whose epoch then proves certified is taken; one still unknown while p
// did not give all its certificates, or still running here, keeps the
// cursor before its page; only the rest (epochs before the window, or
// given up) are passed over.
func (cu *Catchup) From(ctx context.Context, p peer.ID, want map[[32]byte][]peer.ID) {
	cur, err := cu.St.CatchupCursor([]byte(p))
	if err != nil {
		cu.Log.Error("catch-up cursor unreadable", "err", err)
		return
	}
	held := false                   // the kept cursor stays before the first page held
	var certified map[[32]byte]bool // of the window, as last looked at
	reset := false
	for range catchupPages {
		rep, err := cu.IndexPage(ctx, p, cur)
		if err != nil {
			return // away or busy: not a fault
		}
		var pg wire.Index
		if err := pg.Unmarshal(rep, wire.MaxIndexPageItems); err != nil {
			cu.shunPeer(p, err)
			return
		}
		items := len(pg.Entries) + len(pg.Manifests) + len(pg.Removed) + len(pg.Closings)
		if pg.Next < cur && items == 0 && !reset {
			// Its log is shorter than the cursor: its store was
			// replaced. Read it again from the start, once.
			cur, reset = 0, true
			continue
		}
		if pg.Next < cur || (pg.Next == cur && (pg.More || items > 0)) {
			cu.shunPeer(p, fmt.Errorf("index page does not move the cursor on (%d after %d)", pg.Next, cur))
			return
		}
		refreshed, synced, whole, hold := false, false, false, false
		for _, rec := range pg.Closings {
			id := [32]byte(rec[:32]) // the decoder keeps at least 40 bytes
			chain, ok := want[id]
			if !ok {
				if _, err := cu.St.Closing(id); err == nil {
					continue // taken
				}
				// Certificates came since want was made (the sync runs
				// beside): look again, once a page.
				refresh := func() {
					var more map[[32]byte][]peer.ID
					more, _, certified = cu.lackingAll()
					for k, v := range more {
						want[k] = v
					}
				}
				if !refreshed {
					refresh()
					refreshed = true
				}
				if !certified[id] && !synced {
					_, _, whole = cu.Srv.SyncCerts(ctx, p)
					cu.fillCerts(ctx, p, 0)
					synced = true
					refresh()
				}
				if chain, ok = want[id]; !ok {
					// Not certified here though p did not give all its
					// certificates (it refuses a server not yet in its
					// roster, as after a restart), or still running
					// here: read again later.
					hold = hold || (!certified[id] && !whole) || (certified[id] && cu.Srv.Running(id))
					continue
				}
			}
			err := cu.catchupEpoch(ctx, p, chain, rec)
			if errors.Is(err, errForged) {
				cu.shunPeer(p, err)
				return
			}
			if err != nil {
				cu.Log.Info("catch-up: epoch not completed", "epoch", fmt.Sprintf("%x", id[:6]), "err", err)
				return
			}
			delete(want, id)
		}
		held = held || hold
		cur = pg.Next
		if !held {
			if err := cu.St.PutCatchupCursor([]byte(p), cur); err != nil {
				cu.Log.Error("catch-up cursor not kept", "err", err)
				return
			}
		}
		if !pg.More || len(want) == 0 {
			return
		}
	}
}

// indexPageFrom reads p's index page after cur over the epoch protocol,
// in p's slots for the group's servers (onServerIndexReq), which peers
// with no role cannot hold; if p refuses it there (it does not count this
// server in its group, as while on probation), over the client protocol,
// in the outsiders' share of its index slots.
func (cu *Catchup) IndexPage(ctx context.Context, p peer.ID, cur uint64) ([]byte, error) {
	body := (&wire.IndexReq{Cursor: cur}).Marshal()
	rep, err := cu.Srv.Call(ctx, p, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeIndexReq, Body: body, Timeout: transport.ShortTimeout})
	if err != nil && ctx.Err() == nil {
		rep, err = cu.Srv.Call(ctx, p, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeIndexReq, Body: body, Timeout: transport.ShortTimeout})
	}
	return rep, err
}

// catchupEpoch checks an epoch's closing record against its certified
// chain, takes every round it states published and keeps the record.
func (cu *Catchup) catchupEpoch(ctx context.Context, from peer.ID, chain []peer.ID, rec []byte) error {
	var c wire.Closing
	if err := c.Unmarshal(rec, wire.MaxClosingRounds); err != nil {
		return fmt.Errorf("%w: %v", errForged, err)
	}
	if err := proto.CheckChainSigs(chain, proto.ClosingDigest(&c), c.Sigs); err != nil {
		return fmt.Errorf("%w: closing record: %v", errForged, err)
	}
	// Where to ask: the record's sender, then the epoch's chain servers
	// this server knows.
	srcs := []peer.ID{from}
	for _, q := range chain {
		if q != from && q != cu.Srv.Self() && cu.Srv.Known(q) {
			srcs = append(srcs, q)
		}
	}
	for r, cr := range c.Rounds {
		if cr.State != wire.ClosedPublished {
			continue // void or never listed: nothing published
		}
		digest := cr.List
		rl, err := cu.catchupList(ctx, srcs, c.Epoch, uint32(r), func(rl *wire.RoundList) bool { return proto.ListDigest(rl) == digest })
		if err != nil {
			return err
		}
		if err := cu.catchupRound(ctx, srcs, rl); err != nil {
			return err
		}
	}
	return cu.St.PutClosing(c.Epoch, rec)
}

// pace waits Tunables.CatchupGap between two fetches.
func (cu *Catchup) pace(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(cu.T.CatchupGap):
	}
}

// catchupList fetches round r's final list from the first source that
// has one that passes check (its digest is the one the closing record
// signed, or it carries the signature of every chain server).
func (cu *Catchup) catchupList(ctx context.Context, srcs []peer.ID, epoch [32]byte, r uint32, check func(*wire.RoundList) bool) (*wire.RoundList, error) {
	for _, q := range srcs {
		if cu.Shunned(q) {
			continue
		}
		rep, err := cu.Srv.Call(ctx, q, transport.Request{Proto: transport.ProtoRound, Type: wire.TypeListReq, Body: (&wire.EpochRef{Epoch: epoch, Round: r}).Marshal(), Timeout: transport.ShortTimeout})
		cu.pace(ctx)
		if err != nil {
			continue
		}
		var rl wire.RoundList
		if err := rl.Unmarshal(rep, proto.GenericLimits()); err != nil || rl.Epoch != epoch || rl.Round != r || !check(&rl) {
			cu.shunPeer(q, fmt.Errorf("list of round %d not the one signed", r))
			continue
		}
		return &rl, nil
	}
	return nil, fmt.Errorf("node: catch-up: no list of round %d", r)
}

// catchupLists takes epoch id, which has no closing record here, from
// its rounds' final lists: each round's list, from this server's store
// or else from the epoch's chain servers among peers, is taken only with
// a valid signature of every server of the certified chain, the same
// evidence as a record's digest, and only if not void. A round no source
// holds a list of (void, never run, or withheld) is asked again at the
// next pass, until the epoch is given up (catchupTries); a round taken is
// not asked again. Without a record the epoch stays lacking: its record,
// if it ever comes, is taken as usual, and its chunks held already are
// not fetched again.
func (cu *Catchup) catchupLists(ctx context.Context, peers []peer.ID, id [32]byte, chain []peer.ID) {
	var srcs []peer.ID
	for _, q := range chain {
		if q != cu.Srv.Self() && slices.Contains(peers, q) {
			srcs = append(srcs, q)
		}
	}
	signed := func(rl *wire.RoundList) bool {
		return !rl.Void() && proto.CheckChainSigs(chain, proto.ListDigest(rl), rl.Sigs) == nil
	}
	R, ok := cu.epochRounds(ctx, id, srcs)
	if !ok {
		cu.Log.Info("catch-up: epoch's descriptor not found", "epoch", fmt.Sprintf("%x", id[:6]))
		return
	}
	for r := range R {
		if ctx.Err() != nil {
			return
		}
		cu.mu.Lock()
		done := cu.listed[id][r]
		cu.mu.Unlock()
		if done {
			continue
		}
		var rl *wire.RoundList
		if b, err := cu.St.List(id, r); err == nil {
			var own wire.RoundList
			if own.Unmarshal(b, proto.GenericLimits()) == nil && own.Epoch == id && own.Round == r && signed(&own) {
				rl = &own
			}
		}
		if rl == nil {
			var err error
			if rl, err = cu.catchupList(ctx, srcs, id, r, signed); err != nil {
				continue // no source holds one
			}
		}
		if err := cu.catchupRound(ctx, srcs, rl); err != nil {
			cu.Log.Info("catch-up: epoch not completed", "epoch", fmt.Sprintf("%x", id[:6]), "round", r, "err", err)
			continue
		}
		cu.mu.Lock()
		if cu.listed == nil {
			cu.listed = map[[32]byte]map[uint32]bool{}
		}
		if cu.listed[id] == nil {
			cu.listed[id] = map[uint32]bool{}
		}
		cu.listed[id][r] = true
		cu.mu.Unlock()
	}
}

// epochRounds is R of the descriptor of epoch id, certified final in
// the window: the epoch's own, never this server's setting (a group whose
// constants changed ran other R), asked once.
func (cu *Catchup) epochRounds(ctx context.Context, id [32]byte, srcs []peer.ID) (uint32, bool) {
	cu.mu.Lock()
	R, ok := cu.rounds[id]
	cu.mu.Unlock()
	if ok {
		return R, true
	}
	_, bs := cu.Srv.Certs(Window)
	for n, b := range bs {
		var c wire.Cert
		if c.Unmarshal(b) != nil || c.Kind != wire.CertFinal || c.Epoch != id {
			continue
		}
		if R, ok = cu.Srv.EpochRounds(ctx, n, id, srcs); ok {
			cu.mu.Lock()
			if cu.rounds == nil {
				cu.rounds = map[[32]byte]uint32{}
			}
			cu.rounds[id] = R
			cu.mu.Unlock()
		}
		return R, ok
	}
	return 0, false
}

// catchupRound stores the chunks a checked list published that this
// server lacks, and indexes its manifests as publication does
// (manifests.go): the list names the ids the chain's index took.
func (cu *Catchup) catchupRound(ctx context.Context, srcs []peer.ID, rl *wire.RoundList) error {
	for _, id := range append(append([][32]byte(nil), rl.Published...), rl.Manifests...) {
		if ok, err := cu.St.HasChunk(id); err != nil || ok {
			continue
		}
		data, err := cu.catchupChunk(ctx, srcs, id)
		if err != nil {
			return err
		}
		if err := cu.St.PutChunks([]store.Chunk{{ID: id, Data: data}}); err != nil {
			return err
		}
	}
	// The entry's time is when this server took it: the record signs none;
	// the output position is not in the list: unknown here.
	now := time.Unix(time.Now().Unix(), 0) // the index keeps seconds
	r := manifests.Round{Round: rl.Round}
	for _, id := range rl.Manifests {
		r.Cands = append(r.Cands, manifests.Cand{ID: id})
	}
	mans, index, err := manifests.Records(rl.Epoch, r, now, cu.St.GetChunk)
	if err != nil || len(mans) == 0 {
		return err
	}
	return cu.St.PutManifests(mans, index)
}

// catchupChunk fetches one chunk from the first source whose body hashes
// to its id.
func (cu *Catchup) catchupChunk(ctx context.Context, srcs []peer.ID, id [32]byte) ([]byte, error) {
	for _, q := range srcs {
		if cu.Shunned(q) {
			continue
		}
		rep, err := cu.Srv.Call(ctx, q, transport.Request{Proto: transport.ProtoRound, Type: wire.TypeGetChunk, Body: (&wire.Chunk{ID: id}).Marshal(), Timeout: transport.BulkTimeout})
		cu.pace(ctx)
		if err != nil {
			continue
		}
		var c wire.Chunk
		if err := c.Unmarshal(rep, proto.MaxChunkSize); err != nil || c.ID != id || sha256.Sum256(c.Data) != id {
			cu.shunPeer(q, fmt.Errorf("chunk %x not its id", id[:6]))
			continue
		}
		return c.Data, nil
	}
	return nil, fmt.Errorf("node: catch-up: no source of chunk %x", id[:6])
}
