package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/store"
)

// Server catch-up (§7 v3). A server left out of an epoch's chain (a
// partition, lossy links, a crash) holds nothing the epoch published, so
// a client whose primary it is could never sync those files' manifests
// nor fetch their chunks through it. In the background it brings its
// store up to date from the other servers of the group, taking nothing on
// one server's word:
//
//  1. it reads the index log of each roster server of its group, page by
//     page from a cursor kept per peer in its store (the client's IndexReq
//     and pages, over the epoch protocol: indexPageFrom), for the closing
//     records it lacks;
//  2. it takes a closing record only for an epoch whose final certificate
//     it holds (certs.go: signed by every chain server, checked when
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
//     final lists, each only with the signature of every chain server
//     (catchupLists), and stays lacking until its record comes or it is
//     given up.
//
// This suffices: the closing record and each list it names carry the
// signature of every chain server of the epoch, so one honest chain
// server vouches for every id taken, and every byte taken hashes to one of
// them; a peer can withhold, never forge. Index entries and manifest
// bytes in the pages are not used: what the index takes follows from the
// signed lists alone, exactly what every chain server indexed.
//
// A peer whose reply is malformed or fails a check is left alone for
// Tunables.CatchupShun; an epoch that no peer completes is given up after
// catchupTries passes. Passes run at each new certificate and every
// Tunables.CatchupEvery, paced by Tunables.CatchupGap (the rate bound),
// without the server's mutex, one request at a time.
const (
	// catchupPages bounds the index pages read from one peer in a pass.
	catchupPages = 64
	catchupTries = 8
	// catchupRecent: the newest certified numbers, whose epochs may still
	// run or wait for their closing record, are left for later passes.
	catchupRecent = 2
	// catchupWindow bounds the numbers below the newest certified one
	// that the catch-up looks back over.
	catchupWindow = 256
)

// catchState is the catch-up's memory; its own lock, never held with s.mu.
type catchState struct {
	mu    sync.Mutex
	poke  chan struct{}
	shun  map[peer.ID]time.Time
	tries map[[32]byte]int // passes that left an epoch incomplete
	// listed: the rounds of an epoch without a closing record taken
	// from their lists (catchupLists), pruned with tries.
	listed map[[32]byte]map[uint32]bool
}

// errForged marks a reply that fails a check: its sender misbehaves.
var errForged = errors.New("node: catch-up: forged or malformed reply")

func (cs *catchState) pokeCatchup() {
	select {
	case cs.poke <- struct{}{}:
	default:
	}
}

func (s *Server) catchupLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.catch.poke:
		case <-time.After(s.cfg.Timing.CatchupEvery):
		}
		s.catchupPass(ctx)
	}
}

func (s *Server) shunPeer(p peer.ID, why error) {
	s.log.Warn("catch-up: peer left alone", "peer", p.ShortString(), "err", why)
	s.catch.mu.Lock()
	if s.catch.shun == nil {
		s.catch.shun = map[peer.ID]time.Time{}
	}
	s.catch.shun[p] = time.Now().Add(s.cfg.Timing.CatchupShun)
	s.catch.mu.Unlock()
}

func (cs *catchState) shunned(p peer.ID) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return time.Now().Before(cs.shun[p])
}

// lacking returns the certified final epochs of the catch-up window,
// but those running here, whose closing record this server lacks and has
// not given up on, with their chains; old holds those of them certified
// catchupRecent numbers before the newest, whose records are due.
func (s *Server) lacking() (want map[[32]byte][]peer.ID, old map[[32]byte]bool) {
	want, old, _ = s.lackingAll()
	return want, old
}

// lackingAll is lacking, with every epoch of a final certificate of the
// catch-up window.
func (s *Server) lackingAll() (want map[[32]byte][]peer.ID, old, certified map[[32]byte]bool) {
	s.cert.mu.Lock()
	top := s.cert.top
	bs := map[uint64][]byte{}
	for n, b := range s.cert.certs {
		if n+catchupWindow > top {
			bs[n] = b
		}
	}
	s.cert.mu.Unlock()
	want, old = map[[32]byte][]peer.ID{}, map[[32]byte]bool{}
	certified = map[[32]byte]bool{}
	for n, b := range bs {
		var c wire.Cert
		if c.Unmarshal(b) != nil || c.Kind != wire.CertFinal {
			continue
		}
		certified[c.Epoch] = true
		if _, err := s.store.Closing(c.Epoch); err == nil {
			continue
		}
		s.mu.Lock()
		e := s.epochs[c.Epoch]
		running := e != nil && !e.ended
		s.mu.Unlock()
		if running {
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
			if n+catchupRecent <= top {
				old[c.Epoch] = true
			}
		}
	}
	s.catch.mu.Lock()
	for id, n := range s.catch.tries {
		if !certified[id] {
			delete(s.catch.tries, id) // its certificate is gone
		} else if n >= catchupTries {
			delete(want, id)
			delete(old, id)
		}
	}
	for id := range s.catch.listed {
		if !certified[id] {
			delete(s.catch.listed, id)
		}
	}
	s.catch.mu.Unlock()
	return want, old, certified
}

// catchupPass reads the roster servers' index logs until every lacking
// epoch is done. It runs only when a due record lacks; it takes any
// lacking one it finds, since the cursors move past what they read.
func (s *Server) catchupPass(ctx context.Context) {
	peers := s.chain()
	for _, p := range peers {
		if _, gap := s.cert.missingCert(catchupRecent); !gap || ctx.Err() != nil {
			break
		}
		if p != s.h.ID() && !s.catch.shunned(p) {
			s.fillCerts(ctx, p, catchupRecent)
		}
	}
	want, old := s.lacking()
	if len(old) == 0 {
		return
	}
	for _, p := range peers {
		if len(want) == 0 || ctx.Err() != nil {
			break
		}
		if p != s.h.ID() && !s.catch.shunned(p) {
			s.catchupFrom(ctx, p, want)
		}
	}
	// An epoch that a pass already found no closing record of is taken
	// from its rounds' lists: a chain server that fails at the epoch's
	// end leaves it without a record for good (§5.2), though every list
	// it signed is still signed by the whole chain.
	for id, chain := range want {
		s.catch.mu.Lock()
		tried := s.catch.tries[id] > 0
		s.catch.mu.Unlock()
		if old[id] && tried && ctx.Err() == nil {
			s.catchupLists(ctx, peers, id, chain)
		}
	}
	s.catch.mu.Lock()
	if s.catch.tries == nil {
		s.catch.tries = map[[32]byte]int{}
	}
	for id := range want {
		if !old[id] {
			continue
		}
		if s.catch.tries[id]++; s.catch.tries[id] == catchupTries {
			s.log.Warn("catch-up: epoch given up", "epoch", fmt.Sprintf("%x", id[:6]))
		}
	}
	s.catch.mu.Unlock()
}

// missingCert returns the lowest number of the catch-up window, but the
// newest recent, whose certificate this server lacks.
func (cs *certState) missingCert(recent uint64) (uint64, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	top := cs.top
	for n := max(1, top+1-min(top, catchupWindow)); n+recent <= top; n++ {
		if cs.certs[n] == nil {
			return n, true
		}
	}
	return 0, false
}

// fillCerts fetches from p the certificates missing in the catch-up
// window and keeps those that verify (certs.go): a server that moved on by
// a later epoch's certificate (a Prepare carries it) skipped those of the
// epochs it was out of, which the catch-up checks their records against.
func (s *Server) fillCerts(ctx context.Context, p peer.ID, recent uint64) {
	for range maxSyncPages {
		from, gap := s.cert.missingCert(recent)
		if !gap {
			return
		}
		rep, err := call(ctx, s.h, p, request{Proto: ProtoEpoch, Type: wire.TypeCertReq, Body: (&wire.CertReq{From: from}).Marshal(), Timeout: shortTimeout})
		if err != nil {
			return
		}
		var page wire.Certs
		if err := page.Unmarshal(rep); err != nil {
			s.shunPeer(p, err)
			return
		}
		took := false
		for i := range page.Certs {
			c := &page.Certs[i]
			if c.Number < from || c.Number > s.cert.certTop() {
				continue
			}
			if err := s.checkCert(c); err != nil {
				s.log.Info("catch-up: certificate refused", "peer", p.ShortString(), "err", err)
				continue
			}
			took = s.keepCert(c) || took
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
func (s *Server) catchupFrom(ctx context.Context, p peer.ID, want map[[32]byte][]peer.ID) {
	cur, err := s.store.CatchupCursor([]byte(p))
	if err != nil {
		s.log.Error("catch-up cursor unreadable", "err", err)
		return
	}
	held := false                   // the kept cursor stays before the first page held
	var certified map[[32]byte]bool // of the window, as last looked at
	reset := false
	for range catchupPages {
		rep, err := s.indexPageFrom(ctx, p, cur)
		if err != nil {
			return // away or busy: not a fault
		}
		var pg wire.Index
		if err := pg.Unmarshal(rep, wire.MaxIndexPageItems); err != nil {
			s.shunPeer(p, err)
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
			s.shunPeer(p, fmt.Errorf("index page does not move the cursor on (%d after %d)", pg.Next, cur))
			return
		}
		refreshed, synced, whole, hold := false, false, false, false
		for _, rec := range pg.Closings {
			id := [32]byte(rec[:32]) // the decoder keeps at least 40 bytes
			chain, ok := want[id]
			if !ok {
				if _, err := s.store.Closing(id); err == nil {
					continue // taken
				}
				// Certificates came since want was made (the sync runs
				// beside): look again, once a page.
				refresh := func() {
					var more map[[32]byte][]peer.ID
					more, _, certified = s.lackingAll()
					for k, v := range more {
						want[k] = v
					}
				}
				if !refreshed {
					refresh()
					refreshed = true
				}
				if !certified[id] && !synced {
					_, _, whole = s.syncFrom(ctx, p)
					s.fillCerts(ctx, p, 0)
					synced = true
					refresh()
				}
				if chain, ok = want[id]; !ok {
					// Not certified here though p did not give all its
					// certificates (it refuses a server not yet in its
					// roster, as after a restart), or still running
					// here: read again later.
					hold = hold || (!certified[id] && !whole) || (certified[id] && s.runningHere(id))
					continue
				}
			}
			err := s.catchupEpoch(ctx, p, chain, rec)
			if errors.Is(err, errForged) {
				s.shunPeer(p, err)
				return
			}
			if err != nil {
				s.log.Info("catch-up: epoch not completed", "epoch", fmt.Sprintf("%x", id[:6]), "err", err)
				return
			}
			delete(want, id)
		}
		held = held || hold
		cur = pg.Next
		if !held {
			if err := s.store.PutCatchupCursor([]byte(p), cur); err != nil {
				s.log.Error("catch-up cursor not kept", "err", err)
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
func (s *Server) indexPageFrom(ctx context.Context, p peer.ID, cur uint64) ([]byte, error) {
	body := (&wire.IndexReq{Cursor: cur}).Marshal()
	rep, err := call(ctx, s.h, p, request{Proto: ProtoEpoch, Type: wire.TypeIndexReq, Body: body, Timeout: shortTimeout})
	if err != nil && ctx.Err() == nil {
		rep, err = call(ctx, s.h, p, request{Proto: ProtoClient, Type: wire.TypeIndexReq, Body: body, Timeout: shortTimeout})
	}
	return rep, err
}

// runningHere reports whether epoch id runs at this server.
func (s *Server) runningHere(id [32]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[id]
	return e != nil && !e.ended
}

// catchupEpoch checks an epoch's closing record against its certified
// chain, takes every round it states published and keeps the record.
func (s *Server) catchupEpoch(ctx context.Context, from peer.ID, chain []peer.ID, rec []byte) error {
	var c wire.Closing
	if err := c.Unmarshal(rec, wire.MaxClosingRounds); err != nil {
		return fmt.Errorf("%w: %v", errForged, err)
	}
	if err := checkChainSigs(chain, closingDigest(&c), c.Sigs); err != nil {
		return fmt.Errorf("%w: closing record: %v", errForged, err)
	}
	// Where to ask: the record's sender, then the epoch's chain servers
	// this server knows.
	srcs := []peer.ID{from}
	for _, q := range chain {
		if q != from && q != s.h.ID() && s.roster.get(q) != nil {
			srcs = append(srcs, q)
		}
	}
	for r, cr := range c.Rounds {
		if cr.State != wire.ClosedPublished {
			continue // void or never listed: nothing published
		}
		digest := cr.List
		rl, err := s.catchupList(ctx, srcs, c.Epoch, uint32(r), func(rl *wire.RoundList) bool { return listDigest(rl) == digest })
		if err != nil {
			return err
		}
		if err := s.catchupRound(ctx, srcs, rl); err != nil {
			return err
		}
	}
	return s.store.PutClosing(c.Epoch, rec)
}

// pace waits Tunables.CatchupGap between two fetches.
func (s *Server) pace(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(s.cfg.Timing.CatchupGap):
	}
}

// catchupList fetches round r's final list from the first source that
// has one that passes check (its digest is the one the closing record
// signed, or it carries the signature of every chain server).
func (s *Server) catchupList(ctx context.Context, srcs []peer.ID, epoch [32]byte, r uint32, check func(*wire.RoundList) bool) (*wire.RoundList, error) {
	for _, q := range srcs {
		if s.catch.shunned(q) {
			continue
		}
		rep, err := call(ctx, s.h, q, request{Proto: ProtoRound, Type: wire.TypeListReq, Body: (&wire.EpochRef{Epoch: epoch, Round: r}).Marshal(), Timeout: shortTimeout})
		s.pace(ctx)
		if err != nil {
			continue
		}
		var rl wire.RoundList
		if err := rl.Unmarshal(rep, genericLimits()); err != nil || rl.Epoch != epoch || rl.Round != r || !check(&rl) {
			s.shunPeer(q, fmt.Errorf("list of round %d not the one signed", r))
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
func (s *Server) catchupLists(ctx context.Context, peers []peer.ID, id [32]byte, chain []peer.ID) {
	var srcs []peer.ID
	for _, q := range chain {
		if q != s.h.ID() && slices.Contains(peers, q) {
			srcs = append(srcs, q)
		}
	}
	signed := func(rl *wire.RoundList) bool {
		return !rl.Void() && checkChainSigs(chain, listDigest(rl), rl.Sigs) == nil
	}
	for r := range s.cfg.Params.Rounds {
		if ctx.Err() != nil {
			return
		}
		s.catch.mu.Lock()
		done := s.catch.listed[id][r]
		s.catch.mu.Unlock()
		if done {
			continue
		}
		var rl *wire.RoundList
		if b, err := s.store.List(id, r); err == nil {
			var own wire.RoundList
			if own.Unmarshal(b, genericLimits()) == nil && own.Epoch == id && own.Round == r && signed(&own) {
				rl = &own
			}
		}
		if rl == nil {
			var err error
			if rl, err = s.catchupList(ctx, srcs, id, r, signed); err != nil {
				continue // no source holds one
			}
		}
		if err := s.catchupRound(ctx, srcs, rl); err != nil {
			s.log.Info("catch-up: epoch not completed", "epoch", fmt.Sprintf("%x", id[:6]), "round", r, "err", err)
			continue
		}
		s.catch.mu.Lock()
		if s.catch.listed == nil {
			s.catch.listed = map[[32]byte]map[uint32]bool{}
		}
		if s.catch.listed[id] == nil {
			s.catch.listed[id] = map[uint32]bool{}
		}
		s.catch.listed[id][r] = true
		s.catch.mu.Unlock()
	}
}

// catchupRound stores the chunks a checked list published that this
// server lacks, and indexes its manifests as publication does
// (manifests.go): the list names the ids the chain's index took.
func (s *Server) catchupRound(ctx context.Context, srcs []peer.ID, rl *wire.RoundList) error {
	for _, id := range append(append([][32]byte(nil), rl.Published...), rl.Manifests...) {
		if ok, err := s.store.HasChunk(id); err != nil || ok {
			continue
		}
		data, err := s.catchupChunk(ctx, srcs, id)
		if err != nil {
			return err
		}
		if err := s.store.PutChunks([]store.Chunk{{ID: id, Data: data}}); err != nil {
			return err
		}
	}
	// The entry's time is when this server took it: the record signs none.
	now := time.Unix(time.Now().Unix(), 0) // the index keeps seconds
	var mans []store.Manifest
	var index []IndexEntry
	for _, id := range rl.Manifests {
		data, err := s.store.GetChunk(id)
		if err != nil {
			return err
		}
		m, err := chunker.DecodeManifest(data)
		if err != nil {
			continue // no chain server indexed it
		}
		// The output position is not in the list: unknown here.
		mans = append(mans, store.Manifest{ID: id, Epoch: rl.Epoch, Round: rl.Round, Data: data})
		if m.Root {
			index = append(index, IndexEntry{FileID: id, Name: m.Name, Size: uint64(m.Size), Chunks: uint32(m.NumChunks), Epoch: rl.Epoch, Round: rl.Round, Time: now})
		}
	}
	if len(mans) == 0 {
		return nil
	}
	return s.store.PutManifests(mans, index)
}

// catchupChunk fetches one chunk from the first source whose body hashes
// to its id.
func (s *Server) catchupChunk(ctx context.Context, srcs []peer.ID, id [32]byte) ([]byte, error) {
	for _, q := range srcs {
		if s.catch.shunned(q) {
			continue
		}
		rep, err := call(ctx, s.h, q, request{Proto: ProtoRound, Type: wire.TypeGetChunk, Body: (&wire.Chunk{ID: id}).Marshal(), Timeout: bulkTimeout})
		s.pace(ctx)
		if err != nil {
			continue
		}
		var c wire.Chunk
		if err := c.Unmarshal(rep, MaxChunkSize); err != nil || c.ID != id || sha256.Sum256(c.Data) != id {
			s.shunPeer(q, fmt.Errorf("chunk %x not its id", id[:6]))
			continue
		}
		return c.Data, nil
	}
	return nil, fmt.Errorf("node: catch-up: no source of chunk %x", id[:6])
}

// onListReq serves a round's final list to a server catching up: from
// memory while the epoch is held, else as kept in the store.
func (s *Server) onListReq(body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	if err := ref.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	var b []byte
	if e := s.epochs[ref.Epoch]; e != nil {
		if x := e.rounds[ref.Round]; x != nil && x.list != nil && !x.list.Void() {
			b = x.listBytes
		}
	}
	s.mu.Unlock()
	if b == nil {
		var err error
		if b, err = s.store.List(ref.Epoch, ref.Round); err != nil {
			return 0, nil, err
		}
	}
	return wire.TypeRoundList, b, nil
}
