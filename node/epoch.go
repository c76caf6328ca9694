package node

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/closing"
	"github.com/riffle-net/riffle/node/internal/dupwalk"
	"github.com/riffle-net/riffle/node/internal/evidence"
	"github.com/riffle-net/riffle/node/internal/handover"
	"github.com/riffle-net/riffle/node/internal/layerbufs"
	"github.com/riffle-net/riffle/node/internal/manifests"
	"github.com/riffle-net/riffle/node/internal/pirserve"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/pubfetch"
	"github.com/riffle-net/riffle/node/internal/registry"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
)

// sepoch is a server's state of one epoch, grouped by what each part
// belongs to. One lock guards it all, Server.mu (the epoch's parts change
// together: a round's end can end the epoch, a registration reads the
// setup's state), with two exceptions: the identity fields below are set
// before the epoch is published in Server.epochs and final is set once,
// after which both are read without the lock; the registration (reg),
// man, layers, pir and pubs have their own.
type sepoch struct {
	// listing counts S_0's request and void lists being signed; the
	// closing record waits for them (closing.go).
	listing int
	// Identity: the open descriptor's view, this server's chain position
	// and the epoch's nonce.
	v     *proto.View
	pos   int
	nonce [32]byte
	// leader sent the Prepare (rotate.go): every later leader message of
	// the epoch must come from it.
	leader peer.ID
	// closing: the closing record this server signed, the chain's
	// signatures of it and whether one is stored here (internal/closing,
	// its own lock).
	closing closing.Epoch
	// final is the final descriptor's view (nil while registration runs).
	final *proto.View
	// man: which published manifest chunks the index takes, by round
	// (§6.4 v3, package manifests; its own lock).
	man manifests.Index
	// paceNext is the earliest time this server may start its part of
	// the next round (pace.go).
	paceNext time.Time

	epochSecrets
	epochLife
	// reg: the registration, from the Prepare to the final descriptor
	// (internal/registry, its own lock).
	reg registry.Epoch
	setupState
	// dup: a duplicate share at setup (internal/dupwalk, its own lock).
	dup dupwalk.Abort
	roundsState
	// layers: the layer buffers, reused round after round
	// (internal/layerbufs, its own lock).
	layers layerbufs.Bufs
	// pir: the rounds' PIR state at this primary (internal/pirserve,
	// its own lock).
	pir pirserve.Rounds
	// pubs: the last server's publications kept for the chain and
	// their fetches (internal/pubfetch, its own lock).
	pubs pubfetch.Kept
}

// epochSecrets are never on disk and erased by erase (§3 forward secrecy).
// Guarded by Server.mu; the users of epochLife hold them outside it.
type epochSecrets struct {
	sk   *mix.ServerSecret
	rk   *mix.RoundKeys
	dkey *ecdh.PrivateKey
	sec  *mix.StepSecret
	keys []*pir.Keys // per slot, nil for this server's own clients
}

// epochLife is the epoch's end and the uses of its secrets. Guarded by
// Server.mu.
type epochLife struct {
	ended  bool
	reason string
	// users counts the goroutines working with the secrets outside s.mu
	// (mixing, PIR): erasure at the epoch's end waits for the last.
	users  int
	erased bool
}

// setupState is the setup chain of §4.2 and its blame walk (§8 step 1).
// Guarded by Server.mu.
type setupState struct {
	stepMsgs   map[int]*wire.Step
	steps      []*mix.StepResult
	forward    []int
	U          []*group.Element
	pseudonyms []*group.Element
	setupDone  bool

	// A share fault at setup (§4.2 step 3) and the inputs of every step,
	// which its walk back checks the routes against (§8 step 1; the walk
	// is dup's).
	stepInputs [][][]group.Ciphertext
	shareErr   *mix.ShareError
}

// roundsState is the state of the epoch's rounds (§5, §6) and the
// evidence of their faults (§8). Guarded by Server.mu.
type roundsState struct {
	rounds map[uint32]*sround
	// listHigh is one more than the newest round whose request list is
	// final here; rounds below pruned have had their bulk state dropped
	// (prune). Together they bound the rounds a peer can make this server
	// hold state for.
	listHigh, pruned uint32

	// evidence holds the input batch of each void round (§8).
	evidence map[uint32][][]byte
	// voids counts the rounds signed void that left the epoch running
	// (void.go): at most one; a second void ends the epoch.
	voids int
	// roots holds every signed batch root seen, by (round, S) (§5.2).
	roots map[rootKey]wire.Root
	// aheadS0 holds S_0's signed part of each round beyond the admission
	// window until the window reaches it (roots.go holdAheadLocked).
	aheadS0 map[uint32]wire.Root
	// blames: the epoch's round blames, the latest and the earlier
	// ones that each dropped a slot, and the dead slots with their
	// routes (internal/roundblame, deadslot.go).
	blames roundblame.Blames
	held   map[uint32]*heldInput
	// preFinal holds the aborts for a missing publication or list that
	// came before the final descriptor (internal/evidence).
	preFinal evidence.PreFinal
	// noCloseAsking: this server gathers the attestations that the
	// leader never closed the registration (rotate.go endUnclosedLocked).
	noCloseAsking bool
	// staleAsking: this server ends the epoch for a stale round
	// (stale.go endStaleLocked); listAsking: for a round's list past
	// its due (listdue.go).
	staleAsking, listAsking bool
	// rootAt: when each signed root came here (roots.go); openAt: when
	// each round opened here by the group's schedule (round q − mixDepth
	// published or void here, the setup verified for the first rounds,
	// or S_0's signed part of q come, whichever is first);
	// endedAt: when the epoch ended here. A round's absences are due from
	// these (charges.go absenceDue), never from a root alone.
	rootAt  map[rootKey]time.Time
	copies  map[rootKey]*partCopy // each part's copies taken here (rootrelay.go)
	sentAt  map[uint32]time.Time  // when this server passed each round on (its root)
	openAt  map[uint32]time.Time
	endedAt time.Time
	// liveAtEnd: bit j, chain server j was live in the roster here when
	// the epoch ended; a later outage of it is not attested
	// (evidence.Service.DownAttest).
	liveAtEnd uint64
	// attested: this server's one signed attestation of each round's
	// absences, and closeAttest of the registration's close (charges.go):
	// an attester signs one a claim, so that two of one signer are its
	// equivocation.
	attested    map[uint32]*wire.Attest
	closeAttest *wire.Attest
	// listNoted: this server's one signed note of each round that no
	// list was proposed to it by ListGone (listdue.go listNoteLocked).
	listNoted map[uint32]*wire.Attest
	// down: the chain's servers down here, this server's attestations
	// of them and the aborts saying so (internal/evidence).
	down evidence.Down
	// handover: the cover onions this primary's leaving clients handed
	// over, and their slots (internal/handover).
	handover handover.Queue
	// keyNamed: client slots a blame named here and the long-term key
	// evidence for them, each key excluded once (blame.KeyNamed, its own
	// lock).
	keyNamed blame.KeyNamed
	// dries: the signed dry statements held here, this primary's own
	// and those S_0 handed on; shown: the receipts clients showed here of
	// rounds their epoch ended before; heldLogged: the primaries a pair
	// of the two was logged against as evidence, one an epoch as the
	// charge log keeps (held.go, §5.4). A slot this primary signed dry
	// lowers its key's admission priority here.
	dries      map[dryKey]wire.Dry
	shown      map[dryKey]wire.OnionReceipt
	heldLogged map[uint16]bool
	// fwdRoots: the primaries' forward roots held here, one a round of
	// heldRound's and primary; fwdLogged: the primaries a receipt was
	// logged against with a root that leaves it out, one an epoch
	// (forward.go, §5.4).
	fwdRoots  map[accountKey]*wire.ForwardRoot
	fwdLogged map[uint16]bool
	// accounts: the primaries' final accounts given here, as fwdRoots;
	// accLogged: as fwdLogged, for an account that leaves a receipt out.
	accounts  map[accountKey]*wire.Account
	accLogged map[uint16]bool
	// ranDry: this primary's slots it ever signed dry (the dry
	// statements themselves are pruned with their rounds).
	ranDry map[uint32]bool
	// receipted: the slots and rounds this primary receipted, with the
	// onions' digests, kept past the epoch's end (its onions are not);
	// never signed dry; receiptFloor: the rounds below it may have lost
	// theirs (receiptLocked prunes listed rounds), so no final account
	// of them is signed.
	receipted    map[dryKey][32]byte
	receiptFloor uint32
	// accountAsk: when this server began asking the primaries for their
	// accounts of each round, accounted the primaries that gave one
	// covering the receipts shown here, and silentAttest its one signed
	// attestation of which did not (silent.go), a round of heldRound's
	// each.
	accountAsk   map[uint32]time.Time
	accounted    map[accountKey]bool
	silentAttest map[uint32]*wire.Attest
	// asked: the rounds S_0 asked the primaries' dry statements of.
	asked map[uint32]bool
}

// acquire reserves the epoch's secrets for work outside s.mu; false once
// the epoch ended. Call with s.mu held; release when done.
func (e *sepoch) acquire() bool {
	if e.ended {
		return false
	}
	e.users++
	return true
}

// release ends a use begun by acquire and erases the secrets if the epoch
// ended meanwhile. Call with s.mu held.
func (e *sepoch) release() {
	e.users--
	if e.users == 0 && e.ended {
		e.erase()
	}
}

func (e *sepoch) n() int { return len(e.final.Desc.Clients) }

func (e *sepoch) erase() {
	e.erased = true
	// π_s and its inverse walk are secrets too (§3 forward secrecy).
	clear(e.forward)
	e.forward = nil
	if e.sk != nil {
		e.sk.Close()
	}
	if e.rk != nil {
		e.rk.Close()
	}
	if e.sec != nil {
		e.sec.Close()
	}
	for _, k := range e.keys {
		k.Close()
	}
	e.keys = nil
	e.dkey = nil
}

// end marks the epoch over after a fault seen here and tells every other
// server of the chain (§3: a failure ends the epoch for everyone; without
// the notice the others' clients would wait for rounds that never come).
// Call with s.mu held.
func (s *Server) end(e *sepoch, reason string) {
	if e.ended {
		return
	}
	s.endQuiet(e, reason)
	s.evs().BroadcastAbort(evEp(e), wire.AbortFault, 0, reason)
}

// endQuiet marks the epoch over without telling anyone: on a notice from
// another server, at the natural end, or when superseded. Call with s.mu
// held.
func (s *Server) endQuiet(e *sepoch, reason string) {
	if e.ended {
		return
	}
	e.ended, e.reason, e.endedAt = true, reason, time.Now()
	if e.v != nil {
		for j, p := range e.v.Chain {
			if j < 64 && s.roster.get(p) != nil {
				e.liveAtEnd |= 1 << uint(j)
			}
		}
	}
	if e.setupDone {
		// An epoch that ran, not a registration that came to nothing.
		s.lastEnd = time.Now()
	}
	s.keepAccountsLocked(e) // silent.go
	for k := range e.shown {
		s.startAccountsLocked(e, k.round, false)
	}
	s.flushManifests(e)
	if e.final != nil && s.ctx.Err() == nil {
		record := e.reg.HasLT()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if record {
				s.recordClients(e) // reads the submissions of the next round
			}
			s.mu.Lock()
			e.dropEnded(false)
			s.mu.Unlock()
			t := time.NewTimer(s.cfg.Timing.EndGrace)
			defer t.Stop()
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
			}
			s.mu.Lock()
			e.dropEnded(true)
			s.mu.Unlock()
		}()
	}
	if e.final != nil && e.pos == 0 && s.ctx.Err() == nil {
		// §5.2, §7 v3: S_0 has the epoch's closing record signed.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.closeEpoch(e)
		}()
	}
	if e.users == 0 {
		e.erase()
	}
	if s.open == e {
		s.open = nil
	}
	s.progressed()
	s.log.Info("epoch ended", "epoch", fmt.Sprintf("%x", e.v.ID[:6]), "rounds", e.listHigh, "reason", reason)
	s.notify()
}

// forget drops ended epochs except the newest two (their last rounds may
// still be answered) and, for closingHold after their end, the newest
// closingHeld that ran and have no closing record here yet: S_0 proposes
// it again to a chain server it could not reach (closeEpoch), which can
// sign only an epoch it still holds. Call with s.mu held.
func (s *Server) forget() {
	var old []*sepoch
	for _, e := range s.epochs {
		if e.ended {
			old = append(old, e)
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].v.Desc.Number > old[j].v.Desc.Number })
	held := 0
	for _, e := range old[min(len(old), 2):] {
		if e.final != nil && !e.closing.Closed() && held < closingHeld && time.Since(e.endedAt) < closingHold {
			held++
			continue
		}
		s.keepAskingLocked(e) // silent.go
		delete(s.epochs, e.v.ID)
	}
}

// notifyAll sends a small epoch message to every server of to in the
// background, once, within shortTimeout, and ignores the replies: what it
// carries is signed and each receiver acts on it alone, so a server that
// misses it costs nothing but its own view. The server's close waits for it.
func (s *Server) notifyAll(to []peer.ID, t wire.Type, body []byte) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, transport.ShortTimeout)
		defer cancel()
		_, _ = s.each(ctx, to, transport.Request{Proto: ProtoEpoch, Type: t, Body: body, Timeout: transport.ShortTimeout})
	}()
}

// each sends r to every server of chain at once and returns their replies
// in chain order. If chain holds this server, its own handler gets the
// request, the segments joined (a body of one segment as it is: callers
// of one body never reuse it, while a caller of several segments may reuse
// their buffers after the call, and the handler may keep parts of its body).
func (s *Server) each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error) {
	want, _, err := transport.ReplyTo(r.Proto, r.Type)
	if err != nil {
		return nil, err
	}
	segs := r.BodySegments()
	out := make([][]byte, len(chain))
	errs := make([]error, len(chain))
	var wg sync.WaitGroup
	for i, p := range chain {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p == s.h.ID() {
				var h transport.HandlerFunc
				switch r.Proto {
				case ProtoEpoch:
					h = s.handleEpoch
				case ProtoRound:
					h = s.handleRound
				}
				local := segs[0]
				if len(segs) != 1 {
					local = bytes.Join(segs, nil)
				}
				rt, rep, err := h(ctx, p, r.Type, local)
				if err == nil && rt != want {
					err = fmt.Errorf("node: local reply type %d, want %d", rt, want)
				}
				out[i], errs[i] = rep, err
				return
			}
			out[i], errs[i] = transport.Call(ctx, s.h, p, r)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return out, &chainErr{Index: i, Peer: chain[i], Err: err}
		}
	}
	return out, nil
}
