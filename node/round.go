package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

// sround is a server's state of one round of an epoch, grouped by the
// round's stages. Guarded by Server.mu, as the epoch that holds it.
type sround struct {
	// Intake (intake.go) and mixing (mixing.go).
	subs    map[uint32]wire.Submit // primary: its clients'; leader: all
	digests map[uint32][32]byte    // leader: SHA-256 of each slot's onion
	// bodies are the received frames the onions in subs alias (BufPool
	// buffers), given back when the round's state is dropped.
	bodies    [][]byte
	forwarded bool
	mixed     bool
	// fwdRoot: this primary's signed forward root of the round, once it
	// forwarded (forward.go): no onion outside it is taken after.
	fwdRoot *wire.ForwardRoot
	// batchIn: the signed batch of this round was taken (mixing.go
	// onBatch), [0] the predecessor's input, [1] the last server's
	// payloads; a repeat is acknowledged and dropped, never mixed or
	// published again.
	batchIn [2]bool
	// A missing input batch (lack.go): kept is this server's signed
	// batch of the round, served on request to the chain until the
	// round's publication comes here or keptWindow passes; watching: the wait for this server's input runs; lacked:
	// this server gave its input up (a late batch is dropped); lackBy:
	// the S of the server that claimed the lack, 0 if none, and claim
	// its signed claim (wire.ClaimLack, the void's evidence); ownClaim:
	// this server's own claim, the only one it sends (another's claim
	// sent as its own is refused everywhere); sending: this server's
	// delivery of its batch runs.
	kept                      []byte
	watching, lacked, sending bool
	lackBy                    uint16
	claim, ownClaim           *wire.Attest
	// voidWaits: S_0's wait to void the round on a lack claim runs (or
	// ran), by claimant position (wire.MaxServers ≤ 64): one a claimant
	// and round, however many copies of its claim come (onLack).
	voidWaits uint64
	// keptServed: the copies of kept handed to each chain position;
	// notes: by chain position j, the relay of j's batch that its
	// receiver asked this server for (lack.go relayNote).
	keptServed map[int]int
	notes      map[int]*relayNote
	// inAt: when this server took its input batch of the round
	// (batchStep).
	inAt time.Time

	// Publication and the request list (publish.go): pub, the
	// publication stored here (its chunk ids and requests), final once
	// pubDone.
	pub     roundstep.Published
	pubDone bool
	// publishing: publish runs (void.go refuses to sign the round void);
	// void: the round is void here (void.go), its publication is dropped.
	publishing, void bool
	// voidAt: when the round became void here (its absences are judged
	// as of then: roundAttestLocked).
	voidAt    time.Time
	list      *wire.RoundList
	listBytes []byte
	listAt    time.Time // when the final list came here (listdue.go)
	// proposed: S_0 proposed a list of the round here (listdue.go).
	proposed bool
	// proposal: S_0's signed proposal this server signed last, as
	// signed (propBytes) and its digest, kept until the final list is
	// here;
	// listSigs: the chain's signatures of a proposal of the round, one
	// a position (listsig.go).
	proposal   *wire.RoundList
	propBytes  []byte
	propDigest [32]byte
	listSigs   map[uint16]wire.ListSig
	// signed, signedState: the digest of the list this server signed for
	// the round and whether it was void (closing.go).
	signed      [32]byte
	signedState uint8
	// signedListed: the pairs and manifest ids of the list signed
	// published, for the decoy pool while its final list has not come
	// (window.go).
	signedListed window.Listed

	pruned bool // bulk state dropped (prune): nothing more is taken
}

// roundsKept is how many rounds behind the newest final request list a
// server keeps a round's bulk state: the onions (the evidence of a fault,
// which voids its round at once), masks and answers (a client resends a
// query after an error). Without a bound, an epoch of R rounds would hold
// R·n onions: 13 GB at n = 200, b = 256 KiB, R = 256.
const roundsKept = 8

// roundsAhead bounds how far beyond its newest final list a server takes a
// round's submissions or queries: clients submit W rounds ahead of the
// list they have, and primaries forward within mixDepth of S_0's.
const roundsAhead = mixDepth + 2

// admit reports whether round r may hold new state here: neither pruned
// nor too far ahead. Call with s.mu held.
func (e *sepoch) admit(r uint32) error {
	return e.admitRound(e.final.Desc.Params, r)
}

// listed notes that round r's list is final and prunes the rounds that
// fell out of the kept window. Call with s.mu held.
func (e *sepoch) listed(pool *transport.BufPool, r uint32) {
	e.listHigh = max(e.listHigh, r+1)
	e.pubs.Drop(r) // the list is final: nobody signs it without the publication
	for e.pruned+roundsKept < e.listHigh {
		if x := e.rounds[e.pruned]; x != nil {
			// The round was mixed long ago (round r's list needs r−2
			// published, and so on back): nothing refers to its onions.
			for _, b := range x.bodies {
				pool.Put(b)
			}
			x.dropBulk()
		}
		e.pubs.Drop(e.pruned)
		e.pruned++
	}
	for _, b := range e.pir.Prune(e.pruned) {
		pool.Put(b)
	}
}

// dropBulk drops round x's bulk state. Call with s.mu held.
func (x *sround) dropBulk() {
	x.bodies, x.kept = nil, nil
	x.proposal, x.propBytes, x.listSigs = nil, nil, nil
	x.dropRelays()
	x.subs, x.digests = map[uint32]wire.Submit{}, map[uint32][32]byte{}
	x.pruned = true
}

// dropEnded drops the bulk state of an ended epoch's rounds: the epoch
// itself stays a while (forget: its closing, lists and roots), its bulk
// state would be a second epoch's worth. The onions (handed-over ones
// too), padded answers, held inputs and layer buffers go at once (answers
// only: nothing more is mixed or combined), the masks and answers once the requests in flight at the
// end had their grace (EndGrace). An epoch with a round blame keeps it
// all, its walk's evidence. The buffers are not given back to the pool: a
// send begun before the end may still read them. Call with s.mu held.
func (e *sepoch) dropEnded(answers bool) {
	if !e.ended || e.blames.Any() {
		return
	}
	for r, x := range e.rounds {
		if answers {
			if !x.pruned {
				x.dropBulk()
			}
			e.pruned = max(e.pruned, r+1)
			continue
		}
		x.bodies, x.kept = nil, nil
		x.dropRelays()
		x.subs, x.digests = map[uint32]wire.Submit{}, map[uint32][32]byte{}
	}
	e.pubs.DropAll()
	if answers {
		e.pir.Prune(e.pruned) // their frames may still be read by a send
	} else {
		e.pir.DropPads()
	}
	clear(e.held)
	e.handover.DropOnions()
	e.layers.Drop()
}

// opened notes that round r is open here from now (round r − mixDepth
// published or void, the setup verified, or S_0's signed part of r come,
// whichever is first): the start of its absences' dues (attest.go). Call
// with s.mu held.
func (e *sepoch) opened(r uint32) { e.openedAt(r, time.Now()) }

// openedAt is opened at a given time: the time its cause came here, so
// that a part that opens the round and the opening are one instant.
func (e *sepoch) openedAt(r uint32, at time.Time) {
	if e.final == nil || r >= e.final.Desc.Params.Rounds {
		return
	}
	if e.openAt == nil {
		e.openAt = map[uint32]time.Time{}
	}
	if _, ok := e.openAt[r]; !ok {
		e.openAt[r] = at
	}
}

// voided marks round r void here from now and opens round r + mixDepth,
// which S_0 mixes once r is void. Call with s.mu held.
func (e *sepoch) voided(x *sround, r uint32) {
	if !x.void {
		x.void, x.voidAt = true, time.Now()
	}
	e.opened(r + mixDepth)
}

func (e *sepoch) round(r uint32) *sround { return e.at(r) }

// myClients returns the slots whose primary is server j.
func (e *sepoch) clientsOf(j int) []uint32 {
	var out []uint32
	for i, c := range e.final.Desc.Clients {
		if int(c.Primary) == j {
			out = append(out, uint32(i))
		}
	}
	return out
}

func (e *sepoch) bk() (int, int) {
	return int(e.final.Desc.Params.ChunkSize), int(e.final.Desc.Params.K)
}

// keepEvidence keeps the input batch of a void round for blame (§5.2,
// §8): public data, kept until the epoch is forgotten. Call with s.mu held.
func (e *sepoch) keepEvidence(r uint32, entries [][]byte) {
	if _, ok := e.evidence[r]; !ok {
		e.keepCopied(r, copyEntries(entries))
	}
}

// keepCopied is keepEvidence of a copy made outside s.mu (a round's input
// is n onions). Call with s.mu held.
func (e *sepoch) keepCopied(r uint32, cp [][]byte) {
	if e.evidence == nil {
		e.evidence = map[uint32][][]byte{}
	}
	if _, ok := e.evidence[r]; !ok {
		e.evidence[r] = cp
	}
}

func copyEntries(entries [][]byte) [][]byte {
	cp := make([][]byte, len(entries))
	for i, x := range entries {
		cp[i] = append([]byte(nil), x...)
	}
	return cp
}

// trace logs, at debug level, when a stage of round r starts and how long
// it took: the schedule of a round, with no client in it.
func (s *Server) trace(stage string, r uint32) func() {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return func() {}
	}
	start := time.Now()
	return func() {
		s.log.Debug("round stage", "stage", stage, "round", r, "start", start.Format("15:04:05.000"), "took", time.Since(start).Round(time.Microsecond))
	}
}

// awaitSetup waits, up to the round limit, until this server has verified
// the epoch's setup: S_0 starts round 0 once its own check is done, and a
// later server's check (it verifies every step) can still be running when
// round 0's batch arrives. It reports false if the epoch ended instead, or
// ends it if the setup does not finish in time.
func (s *Server) awaitSetup(e *sepoch) bool {
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(s.ctx, limit)
	defer cancel()
	err := s.waitFor(ctx, func() bool { return e.setupDone || e.ended })
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !e.setupDone && !e.ended {
		s.end(e, "setup not verified within the round limit")
	}
	return e.setupDone && !e.ended
}
