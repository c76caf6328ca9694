package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/pir"
)

// sround is a server's state of one round of an epoch (guarded by s.mu).
type sround struct {
	subs    map[uint32]wire.Submit // primary: its clients'; leader: all
	digests map[uint32][32]byte    // leader: SHA-256 of each slot's onion
	// bodies are the received frames the onions in subs alias (bufPool
	// buffers), given back when the round's state is dropped.
	bodies    [][]byte
	forwarded bool
	mixed     bool

	published [][32]byte
	requests  map[[32]byte]bool
	pubDone   bool

	list      *wire.RoundList
	listBytes []byte

	queries map[uint32][][]byte // this server's clients' masks
	pads    map[uint32][][]byte // XOR of the padded answers received
	padFrom map[int]bool
	own     map[uint32][][]byte // R_p for this server's clients
	answers map[uint32][][]byte // combined answers, ready for the client
	pirDone bool

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
	if r < e.pruned {
		return fmt.Errorf("node: round %d is over (rounds before %d are dropped)", r, e.pruned)
	}
	if r >= e.listHigh+uint32(e.final.desc.Params.W)+roundsAhead {
		return fmt.Errorf("node: round %d too far ahead of round %d", r, e.listHigh)
	}
	return nil
}

// listed notes that round r's list is final and prunes the rounds that
// fell out of the kept window. Call with s.mu held.
func (e *sepoch) listed(pool *bufPool, r uint32) {
	e.listHigh = max(e.listHigh, r+1)
	for e.pruned+roundsKept < e.listHigh {
		if x := e.rounds[e.pruned]; x != nil {
			// The round was mixed long ago (round r's list needs r−2
			// published, and so on back): nothing refers to its onions.
			for _, b := range x.bodies {
				pool.put(b)
			}
			x.bodies = nil
			x.subs, x.digests, x.queries = map[uint32]wire.Submit{}, map[uint32][32]byte{}, map[uint32][][]byte{}
			x.pads, x.own, x.answers, x.padFrom = map[uint32][][]byte{}, nil, map[uint32][][]byte{}, map[int]bool{}
			x.pruned = true
		}
		e.pruned++
	}
}

func (e *sepoch) round(r uint32) *sround {
	x := e.rounds[r]
	if x == nil {
		x = &sround{subs: map[uint32]wire.Submit{}, digests: map[uint32][32]byte{}, requests: map[[32]byte]bool{}, queries: map[uint32][][]byte{},
			pads: map[uint32][][]byte{}, padFrom: map[int]bool{}, answers: map[uint32][][]byte{}}
		e.rounds[r] = x
	}
	return x
}

// myClients returns the slots whose primary is server j.
func (e *sepoch) clientsOf(j int) []uint32 {
	var out []uint32
	for i, c := range e.final.desc.Clients {
		if int(c.Primary) == j {
			out = append(out, uint32(i))
		}
	}
	return out
}

func (e *sepoch) lim() wire.Limits {
	l := limitsFor(e.final.desc.Params, len(e.final.chain))
	l.Clients = e.n()
	return l
}

func (e *sepoch) bk() (int, int) {
	return int(e.final.desc.Params.ChunkSize), int(e.final.desc.Params.K)
}

func (s *Server) roundCaps(t wire.Type) int {
	switch t {
	case wire.TypeSubmitBatch, wire.TypeBatch, wire.TypePadAnswers:
		return wire.MaxFrame
	case wire.TypeProposal, wire.TypeRoundList:
		return 64 << 20
	case wire.TypeRoot:
		return 256
	case wire.TypeGetChunk:
		return 64
	}
	return 0
}

func (s *Server) clientCaps(t wire.Type) int {
	switch t {
	case wire.TypeWaitOpen, wire.TypeWaitList, wire.TypeIndexReq:
		return 1024
	case wire.TypeRegister:
		return 64 << 10
	case wire.TypeSubmit:
		return mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers) + 256
	}
	return 0
}

func (s *Server) pirCaps(t wire.Type) int {
	if t == wire.TypeQuery {
		return 64 + MaxK*(8+pir.MaskBytes(MaxRowsCap))
	}
	return 0
}

// epochFor returns a finalised epoch by id.
func (s *Server) epochFor(id [32]byte) (*sepoch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[id]
	if e == nil || e.final == nil {
		return nil, errors.New("node: unknown epoch")
	}
	return e, nil
}

// epochWait bounds how long a primary's forwarded submissions wait for an
// epoch that S_0 has not finalised yet. Servers finalise an epoch at slightly
// different moments, and a primary's first forward can arrive before S_0 has
// the final descriptor; refusing it at once would leave round 0 unfilled
// until the round limit.
const epochWait = 5 * time.Second

// endGrace bounds how long a request for a round still in flight when its
// epoch ended waits for the round's last parts.
const endGrace = 2 * time.Second

// epochForWait is epochFor, waiting up to epochWait for the epoch.
func (s *Server) epochForWait(id [32]byte) (*sepoch, error) {
	ctx, cancel := context.WithTimeout(s.ctx, epochWait)
	defer cancel()
	var e *sepoch
	err := s.waitFor(ctx, func() bool {
		e = s.epochs[id]
		return e != nil && (e.final != nil || e.ended)
	})
	if err != nil || e == nil || e.final == nil {
		return nil, errors.New("node: unknown epoch")
	}
	return e, nil
}

// handleClient serves /riffle/1/client.
func (s *Server) handleClient(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	switch t {
	case wire.TypeWaitOpen:
		var ref wire.EpochRef
		if err := ref.Unmarshal(body); err != nil {
			return 0, nil, err
		}
		var out []byte
		err := s.waitFor(ctx, func() bool {
			if s.open != nil && !s.open.regClosed && s.open.openBytes != nil && s.open.v.id != ref.Epoch {
				out = s.open.openBytes
				return true
			}
			return false
		})
		if err != nil {
			return 0, nil, fmt.Errorf("node: no epoch opened: %w", err)
		}
		return wire.TypeSigned, out, nil
	case wire.TypeRegister:
		return s.onClientRegister(ctx, from, body)
	case wire.TypeSubmit:
		return s.onSubmit(from, body)
	case wire.TypeWaitList:
		var ref wire.EpochRef
		if err := ref.Unmarshal(body); err != nil {
			return 0, nil, err
		}
		e, err := s.epochFor(ref.Epoch)
		if err != nil {
			return 0, nil, err
		}
		out, err := s.waitBytes(ctx, e, func() []byte {
			if x := e.rounds[ref.Round]; x != nil {
				return x.listBytes
			}
			return nil
		}, "epoch ended")
		if err != nil {
			return 0, nil, err
		}
		return wire.TypeRoundList, out, nil
	case wire.TypeIndexReq:
		idx, err := s.store.Index()
		if err != nil {
			return 0, nil, err
		}
		return wire.TypeIndex, (&wire.Index{Entries: idx}).Marshal(), nil
	}
	return 0, nil, fmt.Errorf("node: unexpected client message %d", t)
}

func (s *Server) onClientRegister(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var r wire.Register
	if err := r.Unmarshal(body, genericLimits()); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	e := s.open
	s.mu.Unlock()
	if e == nil || e.v.id != r.Epoch {
		return 0, nil, errors.New("node: epoch not open for registration here")
	}
	if _, err := checkRegister(e.v, &r); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	if e.regClosed {
		s.mu.Unlock()
		return 0, nil, errors.New("node: registration closed")
	}
	if len(e.regs) >= int(e.v.desc.Params.MaxClients) {
		s.mu.Unlock()
		return 0, nil, errors.New("node: epoch full")
	}
	if until, ok := s.banned[from]; ok && e.v.desc.Number <= until {
		s.mu.Unlock()
		return 0, nil, errors.New("node: this client is excluded from this epoch (its share broke the last setup)")
	}
	e.regs[r.RegKey] = r
	if e.regFrom == nil {
		e.regFrom = map[[32]byte]peer.ID{}
	}
	e.regFrom[r.RegKey] = from
	s.mu.Unlock()
	// Forward to the leader (§4.1); the leader also collects every
	// primary's list at the close, so a lost forward costs nothing.
	leader := e.v.chain[0]
	var err error
	if leader == s.h.ID() {
		_, _, err = s.onForwardedRegister(body)
	} else {
		_, err = call(ctx, s.h, leader, ProtoEpoch, wire.TypeRegister, body, wire.TypeAck, 16, shortTimeout)
	}
	if err != nil {
		s.log.Debug("forward registration", "err", err)
	}
	out, err := s.waitBytes(ctx, e, func() []byte { return e.finalBytes }, "epoch did not start")
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeSigned, out, nil
}

// waitBytes waits until get (called under s.mu) returns bytes, or e ends,
// which is an error saying what did not happen and why.
func (s *Server) waitBytes(ctx context.Context, e *sepoch, get func() []byte, what string) ([]byte, error) {
	var out []byte
	if err := s.waitFor(ctx, func() bool {
		out = get()
		return out != nil || e.ended
	}); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("node: %s: %s", what, e.reason)
	}
	return out, nil
}

// onSubmit takes one onion from a client of this primary (§5.1, §5.4).
func (s *Server) onSubmit(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var sub wire.Submit
	if err := sub.Unmarshal(body, genericLimits()); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(sub.Epoch)
	if err != nil {
		return 0, nil, err
	}
	b, k := e.bk()
	m, n := len(e.final.chain), e.n()
	if int(sub.Slot) >= n || int(e.final.desc.Clients[sub.Slot].Primary) != e.pos {
		return 0, nil, errors.New("node: slot not served by this primary")
	}
	if sub.Round >= e.final.desc.Params.Rounds {
		return 0, nil, fmt.Errorf("node: round %d beyond the epoch's %d", sub.Round, e.final.desc.Params.Rounds)
	}
	if len(sub.Onion) != mix.OnionSize(b, k, m) {
		return 0, nil, fmt.Errorf("node: onion of %d bytes, want %d", len(sub.Onion), mix.OnionSize(b, k, m))
	}
	regKey := ed25519.PublicKey(e.final.desc.Clients[sub.Slot].RegKey[:])
	digest := mix.SubmissionDigest(sub.Onion)
	if err := mix.VerifySubmissionDigest(regKey, mix.EpochID(sub.Epoch), uint64(sub.Round), sub.Slot, digest, sub.Sig[:]); err != nil {
		return 0, nil, fmt.Errorf("node: submission: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended {
		return 0, nil, fmt.Errorf("node: epoch ended: %s", e.reason)
	}
	if err := e.admit(sub.Round); err != nil {
		return 0, nil, err
	}
	x := e.round(sub.Round)
	if old, ok := x.subs[sub.Slot]; ok {
		if !bytes.Equal(old.Onion, sub.Onion) {
			// §5.1: two different onions signed for one (round, slot)
			// is evidence against the client; the round cannot run.
			s.end(e, "two onions signed for one slot")
			return 0, nil, errors.New("node: a different onion was already submitted for this round")
		}
		s.pool.put(body) // a resend: nothing refers to it
		return wire.TypeAck, ack, nil
	}
	x.subs[sub.Slot] = sub
	x.bodies = append(x.bodies, body)
	if e.pos == 0 {
		x.digests[sub.Slot] = digest
		// S_0 holds its own clients' onions where the other primaries'
		// batches land: wake its round driver.
		s.notify()
		return wire.TypeAck, ack, nil
	}
	mine := e.clientsOf(e.pos)
	if !x.forwarded && len(x.subs) == len(mine) {
		x.forwarded = true
		batch := wire.SubmitBatch{Epoch: sub.Epoch, Round: sub.Round}
		for _, sl := range mine {
			batch.Subs = append(batch.Subs, x.subs[sl])
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.forwardSubs(e, &batch)
		}()
	}
	return wire.TypeAck, ack, nil
}

func (s *Server) forwardSubs(e *sepoch, batch *wire.SubmitBatch) {
	ctx, cancel := context.WithTimeout(s.ctx, bulkTimeout)
	defer cancel()
	if _, err := callSegments(ctx, s.h, e.final.chain[0], ProtoRound, wire.TypeSubmitBatch, batch.Segments(), wire.TypeAck, 16, bulkTimeout); err != nil {
		s.log.Warn("forward submissions", "round", batch.Round, "err", err)
	}
}

// takeSubs is the leader's intake of a primary's submissions.
func (s *Server) takeSubs(from peer.ID, body []byte, batch *wire.SubmitBatch) error {
	e, err := s.epochForWait(batch.Epoch)
	if err != nil {
		return err
	}
	if e.pos != 0 {
		return errors.New("node: submissions sent to a server that is not S_0")
	}
	b, k := e.bk()
	size := mix.OnionSize(b, k, len(e.final.chain))
	digests := make([][32]byte, len(batch.Subs))
	for i, sub := range batch.Subs {
		c := e.final.desc.Clients
		if int(sub.Slot) >= len(c) || e.final.chain[c[sub.Slot].Primary] != from || sub.Round != batch.Round || len(sub.Onion) != size {
			return fmt.Errorf("node: submission for slot %d not from its primary", sub.Slot)
		}
		digests[i] = mix.SubmissionDigest(sub.Onion)
		if err := mix.VerifySubmissionDigest(ed25519.PublicKey(c[sub.Slot].RegKey[:]), mix.EpochID(sub.Epoch), uint64(sub.Round), sub.Slot, digests[i], sub.Sig[:]); err != nil {
			return fmt.Errorf("node: submission of slot %d: %w", sub.Slot, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := e.admit(batch.Round); err != nil {
		return err
	}
	x := e.round(batch.Round)
	for i, sub := range batch.Subs {
		if old, ok := x.subs[sub.Slot]; ok && !bytes.Equal(old.Onion, sub.Onion) {
			s.end(e, "two onions signed for one slot")
			return errors.New("node: conflicting submissions")
		}
		x.subs[sub.Slot], x.digests[sub.Slot] = sub, digests[i]
	}
	x.bodies = append(x.bodies, body)
	s.notify()
	return nil
}

// mixDepth is how many rounds may be in the chain at once: S_0 mixes round
// r once round r−mixDepth is published here, so that its sending of r
// overlaps the later servers' work on r−1, as well as the PIR of earlier
// rounds. With the cover window W = 2 the onions of r are in by then.
const mixDepth = 2

// mixLoop is S_0's round driver: round r is mixed once every slot has a
// signed onion for it and round r-1 has been published, so that the upload
// and mixing of r overlap the PIR of r-1 (pipelining).
func (s *Server) mixLoop(e *sepoch) {
	p := e.final.desc.Params
	limit := time.Duration(p.RoundLimitMs) * time.Millisecond
	n := e.n()
	for r := uint32(0); r < p.Rounds; r++ {
		ctx, cancel := context.WithTimeout(s.ctx, limit)
		var ins [][]byte
		var sigs [][64]byte
		var hashes [][32]byte
		err := s.waitFor(ctx, func() bool {
			if e.ended || !e.setupDone {
				return e.ended
			}
			x := e.round(r)
			if len(x.subs) < n || (r >= mixDepth && !e.round(r-mixDepth).pubDone) {
				return false
			}
			ins, sigs, hashes = make([][]byte, n), make([][64]byte, n), make([][32]byte, n)
			for i := 0; i < n; i++ {
				ins[i], sigs[i], hashes[i] = x.subs[uint32(i)].Onion, x.subs[uint32(i)].Sig, x.digests[uint32(i)]
			}
			x.mixed = true
			return true
		})
		cancel()
		if err != nil || ins == nil {
			s.mu.Lock()
			// §5.4: a round that cannot be filled ends the epoch.
			s.end(e, fmt.Sprintf("round %d not filled", r))
			s.mu.Unlock()
			return
		}
		s.mixStep(e, r, ins, sigs, hashes)
	}
}

// awaitSetup waits, up to the round limit, until this server has verified
// the epoch's setup: S_0 starts round 0 once its own check is done, and a
// later server's check (it verifies every step) can still be running when
// round 0's batch arrives. It reports false if the epoch ended instead, or
// ends it if the setup does not finish in time.
func (s *Server) awaitSetup(e *sepoch) bool {
	limit := time.Duration(e.final.desc.Params.RoundLimitMs) * time.Millisecond
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

// mixStep opens this server's layer of round r at every input position,
// permutes by π_s and passes the batch on (§5.2).
func (s *Server) mixStep(e *sepoch, r uint32, in [][]byte, clientSigs [][64]byte, clientHashes [][32]byte) {
	defer s.trace("mixStep", r)()
	v := e.final
	m := len(v.chain)
	fail := func(reason string, err error) {
		s.log.Warn("round void", "round", r, "err", err)
		s.mu.Lock()
		s.end(e, reason)
		s.mu.Unlock()
	}
	if !s.awaitSetup(e) {
		return
	}
	s.mu.Lock()
	rk, U, fwd := e.rk, e.U, e.forward
	ok := e.acquire()
	s.mu.Unlock()
	if !ok {
		return
	}
	defer func() {
		s.mu.Lock()
		e.release()
		s.mu.Unlock()
	}()
	mixStart := time.Now()
	keys, err := mix.ServerLayerKeys(mix.EpochID(v.id), e.pos, uint64(r), rk, U)
	if err != nil {
		fail("layer keys", err)
		return
	}
	// Decrypt into this epoch's reused buffers (never in place: the input
	// is the predecessor's signed batch, the evidence of a blame).
	bufs := e.takeLayerBufs(len(in), len(in[0])-mix.TagSize)
	defer e.putLayerBufs(s, bufs)
	out, err := mix.OpenLayerInto(bufs, mix.EpochID(v.id), uint64(r), e.pos, keys, in)
	mix.CloseLayerKeys(keys)
	if err != nil {
		// §5.2 (v2): any fault voids the round; nothing is forwarded. The
		// input batch stays as the evidence for blame (§8).
		s.mu.Lock()
		e.keepEvidence(r, in)
		s.mu.Unlock()
		fail(fmt.Sprintf("round %d void: layer %d: %v", r, e.pos, err), err)
		return
	}
	out = mix.Permute(fwd, out)
	s.timing.add(&s.timing.mix, time.Since(mixStart))
	b := wire.Batch{Epoch: v.id, Round: r, S: uint16(e.pos + 1), Entries: out, ClientSigs: clientSigs, ClientHashes: clientHashes}
	if err := s.signBatch(&b); err != nil {
		fail("sign batch", err)
		return
	}
	s.announceRoot(e, &b)
	ctx, cancel := context.WithTimeout(s.ctx, bulkTimeout)
	defer cancel()
	if e.pos == m-1 {
		// Published payloads go out without their zero padding (a cover
		// is all padding): every receiver puts it back before it checks
		// the root (wire.ZeroRun). The bytes signed are the same.
		bb, k := e.bk()
		b.Zeros = make([]wire.ZeroRun, len(out))
		for i, raw := range out {
			at, n := mix.PaddingRun(raw, bb, k)
			b.Zeros[i] = wire.ZeroRun{At: uint32(at), N: uint32(n)}
		}
		// The payloads go to every other server while this one publishes
		// its own output in place: no copy of the batch, no second Merkle
		// root of what it has just signed. The buffers stay ours until
		// both are done.
		others := make([]peer.ID, 0, m-1)
		for _, p := range v.chain {
			if p != s.h.ID() {
				others = append(others, p)
			}
		}
		sent := make(chan error, 1)
		go func() {
			_, err := s.eachSegments(ctx, others, ProtoRound, wire.TypeBatch, b.Segments(), wire.TypeAck, 16, bulkTimeout)
			sent <- err
		}()
		s.publish(e, r, out)
		if err := <-sent; err != nil {
			s.log.Warn("publish", "round", r, "err", err)
		}
		return
	}
	if _, err := callSegments(ctx, s.h, v.chain[e.pos+1], ProtoRound, wire.TypeBatch, b.Segments(), wire.TypeAck, 16, bulkTimeout); err != nil {
		fail("forward batch", err)
	}
}

// checkClientSigs checks that every input slot of the batch's round holds an
// onion its client signed (§5.1, §5.2): the signature of slot i by the
// registration key of slot i over the onion's hash, as S_0 received it.
func checkClientSigs(e *sepoch, b *wire.Batch) error {
	c := e.final.desc.Clients
	if len(b.ClientSigs) != len(c) || len(b.ClientHashes) != len(c) {
		return fmt.Errorf("%d client signatures and %d onion hashes for %d slots", len(b.ClientSigs), len(b.ClientHashes), len(c))
	}
	for i := range c {
		if err := mix.VerifySubmissionDigest(ed25519.PublicKey(c[i].RegKey[:]), mix.EpochID(b.Epoch), uint64(b.Round), uint32(i), b.ClientHashes[i], b.ClientSigs[i][:]); err != nil {
			return fmt.Errorf("slot %d: %w", i, err)
		}
	}
	return nil
}

func batchDigest(b *wire.Batch) [32]byte {
	var e wire.Enc
	e.U32(b.Round)
	e.U16(b.S)
	return taggedHash(tagBatch, b.Epoch[:], e.B, b.Root[:])
}

func (s *Server) signBatch(b *wire.Batch) error {
	b.Root = merkleRoot(b.Entries)
	sig, err := sign(s.priv, batchDigest(b))
	b.Sig = sig
	return err
}

// handleRound serves /riffle/1/round (servers only).
func (s *Server) handleRound(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if from != s.h.ID() && s.roster.get(from) == nil {
		return 0, nil, errors.New("node: round messages are for chain servers")
	}
	switch t {
	case wire.TypeSubmitBatch:
		var b wire.SubmitBatch
		if err := b.Unmarshal(body, genericLimits()); err != nil {
			return 0, nil, err
		}
		if err := s.takeSubs(from, body, &b); err != nil {
			return 0, nil, err
		}
		return wire.TypeAck, ack, nil
	case wire.TypeBatch:
		return s.onBatch(from, body)
	case wire.TypeProposal:
		return s.onProposal(ctx, from, body)
	case wire.TypeRoundList:
		return s.onRoundList(from, body)
	case wire.TypePadAnswers:
		return s.onPadAnswers(from, body)
	case wire.TypeRoot:
		return s.onRoot(from, body)
	case wire.TypeGetChunk:
		var c wire.Chunk
		if err := c.Unmarshal(body, 0); err != nil {
			return 0, nil, err
		}
		data, err := s.store.GetChunk(c.ID)
		if err != nil {
			return 0, nil, err
		}
		return wire.TypeChunk, (&wire.Chunk{ID: c.ID, Data: data}).Marshal(), nil
	}
	return 0, nil, fmt.Errorf("node: unexpected round message %d", t)
}

func (s *Server) onBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var b wire.Batch
	// Entries sent without their zero padding are rebuilt in recycled
	// buffers (a published round of covers is n·b bytes rebuilt).
	var rebuilt [][]byte
	alloc := func(n int) []byte {
		x := s.pool.get(n)
		rebuilt = append(rebuilt, x)
		return x
	}
	// Sender, epoch and signature are checked on the head alone, before
	// the body costs anything: only then are entries rebuilt, bounded by
	// this epoch's limits (§5.2; only a signed batch is evidence against
	// its sender).
	h, err := wire.PeekBatch(body)
	if err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(h.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	m, n := len(v.chain), e.n()
	S := int(h.S)
	if S < 1 || S > m || v.chain[S-1] != from || (S < m && S != e.pos) {
		return 0, nil, fmt.Errorf("node: batch for server %d not expected from %s", S, from.ShortString())
	}
	if err := verifyPeerSig(from, batchDigest(&wire.Batch{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root}), h.Sig); err != nil {
		return 0, nil, err
	}
	lim := limitsFor(v.desc.Params, m)
	lim.Frame = s.roundCaps(wire.TypeBatch)
	if err := b.UnmarshalAlloc(body, lim, alloc); err != nil {
		return 0, nil, err
	}
	if !s.noteRoot(e, &wire.Root{Epoch: b.Epoch, Round: b.Round, S: b.S, Root: b.Root, Sig: b.Sig}) {
		return wire.TypeAck, ack, nil
	}
	if b.Round >= v.desc.Params.Rounds || merkleRoot(b.Entries) != b.Root {
		return 0, nil, errors.New("node: malformed batch")
	}
	bb, k := e.bk()
	want := mix.OnionSize(bb, k, m) - mix.TagSize*S
	bad := len(b.Entries) != n
	for _, x := range b.Entries {
		bad = bad || len(x) != want
	}
	if bad {
		// §5.2 (v2): a signed batch with a missing or wrong-size entry is
		// a fault of its sender: the round is void (nothing forwarded,
		// nothing published), the signed batch is kept as evidence, and
		// the epoch ends for everyone. It is acknowledged: it was
		// delivered, and refusing it would only hide the evidence.
		s.mu.Lock()
		e.keepEvidence(b.Round, b.Entries)
		s.end(e, fmt.Sprintf("round %d void: batch from server %d malformed", b.Round, S-1))
		s.mu.Unlock()
		return wire.TypeAck, ack, nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// The body and the rebuilt entries (every entry lives in one) go
		// back to the pool once the round's work here is done: evidence is
		// kept as a copy.
		defer func() {
			s.pool.put(body)
			for _, x := range rebuilt {
				s.pool.put(x)
			}
		}()
		if err := checkClientSigs(e, &b); err != nil {
			// §5.2 (v2): a slot without its client's signature is a fault
			// of the sender, who passed it on: void, evidence kept.
			s.log.Warn("round void", "round", b.Round, "err", err)
			s.mu.Lock()
			e.keepEvidence(b.Round, b.Entries)
			s.end(e, fmt.Sprintf("round %d void: batch from server %d: %v", b.Round, S-1, err))
			s.mu.Unlock()
			return
		}
		if S < m {
			s.mixStep(e, b.Round, b.Entries, b.ClientSigs, b.ClientHashes)
		} else {
			s.publish(e, b.Round, b.Entries)
		}
	}()
	return wire.TypeAck, ack, nil
}

// publish checks, stores and indexes a round's payloads (§5.3, §7).
func (s *Server) publish(e *sepoch, r uint32, payloads [][]byte) {
	defer s.trace("publish", r)()
	v := e.final
	if !s.awaitSetup(e) {
		return
	}
	s.mu.Lock()
	if e.ended {
		s.mu.Unlock()
		return
	}
	ps := e.pseudonyms
	s.mu.Unlock()
	b, k := e.bk()
	verifyStart := time.Now()
	bad := mix.VerifyPayloads(mix.EpochID(v.id), uint64(r), ps, payloads, s.rand)
	s.timing.add(&s.timing.verify, time.Since(verifyStart))
	badAt := make(map[int]bool, len(bad))
	for _, q := range bad {
		badAt[q] = true
	}
	var chunks []StoredChunk
	var published [][32]byte
	var index []wire.IndexEntry
	requests := map[[32]byte]bool{}
	now := time.Now().Unix()
	for q, raw := range payloads {
		if badAt[q] {
			continue
		}
		p, err := mix.DecodePayload(raw, b, k)
		if err != nil {
			s.mu.Lock()
			s.end(e, fmt.Sprintf("round %d: payload %d malformed", r, q))
			s.mu.Unlock()
			return
		}
		for _, rq := range p.Requests {
			if rq != ([32]byte{}) {
				requests[rq] = true
			}
		}
		if p.Kind != mix.KindChunk {
			continue
		}
		data := p.Chunk[:p.Length]
		id := sha256.Sum256(data)
		chunks = append(chunks, StoredChunk{ID: id, Data: data})
		published = append(published, id)
		if chunker.IsManifest(data) {
			if man, err := chunker.DecodeManifest(data); err == nil && man.Root {
				index = append(index, wire.IndexEntry{FileID: id, Name: []byte(man.Name), Size: uint64(man.Size), Chunks: uint32(man.NumChunks), Round: r, Time: now})
			}
		}
	}
	storeStart := time.Now()
	err := s.store.PutRound(v.id, r, published, chunks, index)
	s.timing.add(&s.timing.store, time.Since(storeStart))
	s.timing.addRound()
	if err == nil && len(bad) > 0 {
		// §5.3: the payloads that verify, public already, are stored;
		// the round is not acknowledged and blame starts at the first bad
		// position (the walk itself is not implemented: the epoch ends).
		s.mu.Lock()
		s.end(e, fmt.Sprintf("round %d: bad pseudonym signature at %d of %d positions", r, len(bad), len(payloads)))
		s.mu.Unlock()
		return
	}
	if err != nil {
		s.log.Error("store round", "round", r, "err", err)
		s.mu.Lock()
		s.end(e, "store failed")
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	x := e.round(r)
	x.published, x.requests, x.pubDone = published, requests, true
	s.notify()
	s.mu.Unlock()
	if e.pos == 0 {
		s.proposeList(e, r)
	}
}

// proposeList is the leader's request list for round r (§5.3 v2): the ids
// requested this round that it holds, sorted, de-duplicated, cut to L_max,
// with lengths; every server signs it.
func (s *Server) proposeList(e *sepoch, r uint32) {
	defer s.trace("proposeList", r)()
	v := e.final
	s.mu.Lock()
	x := e.round(r)
	var ids [][32]byte
	for id := range x.requests {
		ids = append(ids, id)
	}
	published := x.published
	s.mu.Unlock()
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	rl := wire.RoundList{Epoch: v.id, Round: r, Published: published}
	// Ids not held are left out, never a zero row.
	held, err := s.store.Held(ids)
	if err != nil {
		s.log.Warn("request list", "round", r, "err", err)
	}
	rl.Entries = held[:min(len(held), int(v.desc.Params.MaxRows))]
	ctx, cancel := context.WithTimeout(s.ctx, bulkTimeout)
	defer cancel()
	reps, err := s.each(ctx, v.chain, ProtoRound, wire.TypeProposal, rl.Marshal(), wire.TypeSig, 256, bulkTimeout)
	if err != nil {
		s.log.Warn("request list refused", "round", r, "err", err)
		s.mu.Lock()
		s.end(e, fmt.Sprintf("round %d: request list refused", r))
		s.mu.Unlock()
		return
	}
	for i, rep := range reps {
		var sg wire.Sig
		if err := sg.Unmarshal(rep); err != nil || int(sg.Index) != i {
			s.mu.Lock()
			s.end(e, "bad list signature")
			s.mu.Unlock()
			return
		}
		rl.Sigs = append(rl.Sigs, sg.Sig)
	}
	if _, err := s.each(ctx, v.chain, ProtoRound, wire.TypeRoundList, rl.Marshal(), wire.TypeAck, 16, bulkTimeout); err != nil {
		s.log.Warn("deliver request list", "round", r, "err", err)
	}
}

func listDigest(rl *wire.RoundList) [32]byte { return taggedHash(tagList, rl.MarshalBody()) }

func (s *Server) onProposal(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var rl wire.RoundList
	if err := rl.Unmarshal(body, genericLimits()); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(rl.Epoch)
	if err != nil {
		return 0, nil, err
	}
	if e.final.chain[0] != from || len(rl.Sigs) != 0 || len(rl.Entries) > int(e.final.desc.Params.MaxRows) {
		return 0, nil, errors.New("node: proposal not from the leader or malformed")
	}
	var x *sround
	if err := s.waitFor(ctx, func() bool { x = e.round(rl.Round); return x.pubDone || e.ended }); err != nil || !x.pubDone {
		return 0, nil, errors.New("node: round not published here")
	}
	s.mu.Lock()
	samePub := len(x.published) == len(rl.Published)
	for i := 0; samePub && i < len(x.published); i++ {
		samePub = x.published[i] == rl.Published[i]
	}
	reqOK := true
	for i, le := range rl.Entries {
		if !x.requests[le.ID] || (i > 0 && bytes.Compare(rl.Entries[i-1].ID[:], le.ID[:]) >= 0) {
			reqOK = false
		}
	}
	s.mu.Unlock()
	if !samePub {
		return 0, nil, errors.New("node: proposal's published ids differ from this server's")
	}
	if !reqOK {
		return 0, nil, errors.New("node: proposal lists an id nobody requested, or is not sorted")
	}
	// Fetch what this server lacks (chunks are public and self-verifying).
	ids := make([][32]byte, len(rl.Entries))
	for i, le := range rl.Entries {
		ids[i] = le.ID
	}
	heldList, err := s.store.Held(ids)
	if err != nil {
		return 0, nil, fmt.Errorf("node: proposal: %w", err)
	}
	held := make(map[[32]byte]uint32, len(heldList))
	for _, h := range heldList {
		held[h.ID] = h.Len
	}
	for _, le := range rl.Entries {
		if n, ok := held[le.ID]; ok {
			if n != le.Len {
				return 0, nil, fmt.Errorf("node: proposal length of %x is wrong", le.ID[:6])
			}
			continue
		}
		rep, err := call(ctx, s.h, from, ProtoRound, wire.TypeGetChunk, (&wire.Chunk{ID: le.ID}).Marshal(), wire.TypeChunk, MaxChunkSize+64, bulkTimeout)
		if err != nil {
			return 0, nil, fmt.Errorf("node: fetch %x: %w", le.ID[:6], err)
		}
		var c wire.Chunk
		if err := c.Unmarshal(rep, MaxChunkSize); err != nil || c.ID != le.ID || sha256.Sum256(c.Data) != le.ID || len(c.Data) != int(le.Len) {
			return 0, nil, fmt.Errorf("node: fetched chunk %x does not verify", le.ID[:6])
		}
		if err := s.store.PutChunks([]StoredChunk{{ID: c.ID, Data: c.Data}}); err != nil {
			return 0, nil, err
		}
	}
	sig, err := sign(s.priv, listDigest(&rl))
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
}

func (s *Server) onRoundList(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var rl wire.RoundList
	if err := rl.Unmarshal(body, genericLimits()); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(rl.Epoch)
	if err != nil {
		return 0, nil, err
	}
	if e.final.chain[0] != from {
		return 0, nil, errors.New("node: request list not from the leader")
	}
	if err := checkList(e.final, &rl); err != nil {
		return 0, nil, err
	}
	if err := s.store.PutRequests(rl.Epoch, rl.Round, rl.Entries); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	x := e.round(rl.Round)
	first := x.list == nil
	if first {
		x.list, x.listBytes = &rl, body
		e.listed(&s.pool, rl.Round)
		s.notify()
	}
	s.mu.Unlock()
	if first {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.answerRound(e, rl.Round) }()
		s.checkDepartures(e, rl.Round)
	}
	return wire.TypeAck, ack, nil
}

// checkList verifies all m signatures of a request list.
func checkList(v *view, rl *wire.RoundList) error {
	if rl.Epoch != v.id || rl.Round >= v.desc.Params.Rounds {
		return errors.New("node: request list of another epoch or round")
	}
	if len(rl.Sigs) != len(v.chain) {
		return fmt.Errorf("node: request list with %d signatures for %d servers", len(rl.Sigs), len(v.chain))
	}
	dg := listDigest(rl)
	for j, id := range v.chain {
		if err := verifyPeerSig(id, dg, rl.Sigs[j]); err != nil {
			return fmt.Errorf("node: request list signature %d: %w", j, err)
		}
	}
	return nil
}

// dbIDs returns the PIR database of a list: its ids, or none for the one
// zero row of an empty list (§5.3).
func dbRows(rows [][]byte) pir.Rows {
	if len(rows) == 0 {
		return pir.SliceRows{nil}
	}
	return pir.SliceRows(rows)
}

// answerRound does this server's PIR work of round r (§6.3): padded
// answers for every other primary's clients, then its own clients'
// answers once their masks and the others' padded answers are in.
func (s *Server) answerRound(e *sepoch, r uint32) {
	defer s.trace("answerRound", r)()
	v := e.final
	m := len(v.chain)
	b, k := e.bk()
	s.mu.Lock()
	x := e.round(r)
	rl := x.list
	keys := e.keys
	ok := keys != nil && e.acquire()
	s.mu.Unlock()
	if !ok {
		return
	}
	defer func() {
		s.mu.Lock()
		e.release()
		s.mu.Unlock()
	}()
	ids := make([][32]byte, len(rl.Entries))
	for i, le := range rl.Entries {
		ids[i] = le.ID
	}
	L := max(1, len(ids))
	ctx, cancel := context.WithTimeout(s.ctx, bulkTimeout)
	defer cancel()
	for j := 0; j < m; j++ {
		if j == e.pos {
			continue
		}
		slots := e.clientsOf(j)
		if len(slots) == 0 {
			continue
		}
		masks := make([][]byte, 0, len(slots)*k)
		out := make([][]byte, len(slots)*k)
		for _, sl := range slots {
			for t := 0; t < k; t++ {
				masks = append(masks, keys[sl].Mask(uint64(r), uint32(t), L))
			}
		}
		// One recycled block for all the padded answers to primary j,
		// back to the pool once they are sent.
		block := s.pool.get(len(out) * b)
		for i := range out {
			out[i] = block[i*b : (i+1)*b : (i+1)*b]
		}
		pirStart := time.Now()
		err := s.store.ViewChunks(ids, func(rows [][]byte) error { return s.engine.Answer(dbRows(rows), b, masks, out) })
		s.timing.add(&s.timing.pir, time.Since(pirStart))
		if err != nil {
			s.log.Warn("pir answer", "round", r, "err", err)
			return
		}
		for i, sl := range slots {
			for t := 0; t < k; t++ {
				keys[sl].XORPad(uint64(r), uint32(t), out[i*k+t])
			}
		}
		msg := (&wire.Rows{Epoch: v.id, Round: r, Slots: slots, Rows: out}).Segments()
		// Sent in the background, on a context of its own: this function
		// goes on to its own clients and returns before the send ends.
		s.wg.Add(1)
		go func(p peer.ID) {
			defer s.wg.Done()
			sctx, scancel := context.WithTimeout(s.ctx, bulkTimeout)
			defer scancel()
			if _, err := callSegments(sctx, s.h, p, ProtoRound, wire.TypePadAnswers, msg, wire.TypeAck, 16, bulkTimeout); err != nil {
				s.log.Warn("padded answers", "round", r, "err", err)
			}
			s.pool.put(block)
		}(v.chain[j])
	}
	// Own clients: wait for their masks (every client queries every round;
	// a silent one gets nothing after the round limit).
	mine := e.clientsOf(e.pos)
	wctx, wcancel := context.WithTimeout(ctx, time.Duration(v.desc.Params.RoundLimitMs)*time.Millisecond)
	_ = s.waitFor(wctx, func() bool { return len(x.queries) == len(mine) || e.ended })
	wcancel()
	s.mu.Lock()
	var slots []uint32
	var masks [][]byte
	for _, sl := range mine {
		if q, ok := x.queries[sl]; ok {
			slots = append(slots, sl)
			masks = append(masks, q...)
		}
	}
	s.mu.Unlock()
	if len(slots) > 0 {
		out := make([][]byte, len(masks))
		for i := range out {
			out[i] = make([]byte, b)
		}
		pirStart := time.Now()
		err := s.store.ViewChunks(ids, func(rows [][]byte) error { return s.engine.Answer(dbRows(rows), b, masks, out) })
		s.timing.add(&s.timing.pir, time.Since(pirStart))
		if err != nil {
			s.log.Warn("pir answer", "round", r, "err", err)
			return
		}
		s.mu.Lock()
		if x.pruned {
			s.mu.Unlock()
			return
		}
		x.own = map[uint32][][]byte{}
		for i, sl := range slots {
			x.own[sl] = out[i*k : (i+1)*k]
		}
		s.combine(e, x)
		s.mu.Unlock()
	}
	if r == v.desc.Params.Rounds-1 {
		// Give the last round's answers time to reach their clients.
		time.AfterFunc(2*time.Second, func() {
			s.mu.Lock()
			s.endQuiet(e, "complete")
			s.mu.Unlock()
		})
	}
}

// combine finishes the answers whose own part and m-1 padded parts are in
// (§6.3); call with s.mu held.
func (s *Server) combine(e *sepoch, x *sround) {
	m := len(e.final.chain)
	if x.own == nil || len(x.padFrom) < m-1 {
		return
	}
	for sl, own := range x.own {
		if _, done := x.answers[sl]; done {
			continue
		}
		if pads := x.pads[sl]; pads != nil {
			for t := range own {
				pir.XorInto(own[t], pads[t])
			}
		}
		x.answers[sl] = own
	}
	x.pirDone = true
	s.notify()
}

func (s *Server) onPadAnswers(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	// The epoch id leads the body: find the epoch to bound the rest.
	if len(body) < 36 {
		return 0, nil, errors.New("node: short padded answers")
	}
	copy(ref.Epoch[:], body[:32])
	e, err := s.epochFor(ref.Epoch)
	if err != nil {
		return 0, nil, err
	}
	b, k := e.bk()
	var rows wire.Rows
	if err := rows.Unmarshal(body, e.n(), k, b); err != nil {
		return 0, nil, err
	}
	j := -1
	for i, p := range e.final.chain {
		if p == from {
			j = i
		}
	}
	if j < 0 || j == e.pos {
		return 0, nil, errors.New("node: padded answers from outside the chain")
	}
	mine := e.clientsOf(e.pos)
	if len(rows.Slots) != len(mine) {
		return 0, nil, fmt.Errorf("node: padded answers for %d slots, this primary serves %d", len(rows.Slots), len(mine))
	}
	for i, sl := range rows.Slots {
		if sl != mine[i] {
			return 0, nil, errors.New("node: padded answers for slots of another primary")
		}
	}
	for _, row := range rows.Rows {
		if len(row) != b {
			return 0, nil, fmt.Errorf("node: padded answer of %d bytes, want %d", len(row), b)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := e.admit(rows.Round); err != nil {
		return 0, nil, err
	}
	x := e.round(rows.Round)
	if x.padFrom[j] {
		return wire.TypeAck, ack, nil
	}
	x.padFrom[j] = true
	for i, sl := range rows.Slots {
		acc := x.pads[sl]
		if acc == nil {
			x.pads[sl] = rows.Rows[i*k : (i+1)*k]
			continue
		}
		for t := 0; t < k; t++ {
			pir.XorInto(acc[t], rows.Rows[i*k+t])
		}
	}
	s.combine(e, x)
	return wire.TypeAck, ack, nil
}

// handlePIR serves a client's k masks for a round and returns its k
// combined answers (§6.3).
func (s *Server) handlePIR(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, [][]byte, error) {
	if len(body) < 36 {
		return 0, nil, errors.New("node: short query")
	}
	var id [32]byte
	copy(id[:], body[:32])
	e, err := s.epochFor(id)
	if err != nil {
		return 0, nil, err
	}
	_, k := e.bk()
	var q wire.Rows
	if err := q.Unmarshal(body, 1, k, pir.MaskBytes(int(e.final.desc.Params.MaxRows))); err != nil {
		return 0, nil, err
	}
	if len(q.Slots) != 1 {
		return 0, nil, errors.New("node: a query names one slot")
	}
	sl := q.Slots[0]
	if int(sl) >= e.n() || int(e.final.desc.Clients[sl].Primary) != e.pos {
		return 0, nil, errors.New("node: slot not served by this primary")
	}
	s.mu.Lock()
	err = e.admit(q.Round)
	s.mu.Unlock()
	if err != nil {
		return 0, nil, err
	}
	var x *sround
	if err := s.waitFor(ctx, func() bool { x = e.round(q.Round); return x.list != nil || e.ended }); err != nil || x.list == nil {
		return 0, nil, errors.New("node: no request list for this round")
	}
	L := max(1, len(x.list.Entries))
	for _, mk := range q.Rows {
		if err := pir.CheckMask(mk, L); err != nil {
			return 0, nil, err
		}
	}
	s.mu.Lock()
	if x.pruned {
		s.mu.Unlock()
		return 0, nil, fmt.Errorf("node: round %d is over", q.Round)
	}
	if old, ok := x.queries[sl]; ok {
		same := true
		for t := range old {
			same = same && bytes.Equal(old[t], q.Rows[t])
		}
		if !same {
			s.mu.Unlock()
			return 0, nil, errors.New("node: a different query was already sent for this slot and round")
		}
	} else {
		x.queries[sl] = q.Rows
		s.notify()
	}
	s.mu.Unlock()
	var ans [][]byte
	err = s.waitFor(ctx, func() bool { ans = x.answers[sl]; return ans != nil || e.ended || x.pruned })
	if err == nil && ans == nil {
		// The epoch ended with this round in flight: its last padded
		// answers may still be on their way, or may never come (a server
		// that saw the end first stops answering). Wait a bounded grace,
		// never the client's whole poll.
		gctx, cancel := context.WithTimeout(ctx, endGrace)
		_ = s.waitFor(gctx, func() bool { ans = x.answers[sl]; return ans != nil })
		cancel()
	}
	if ans == nil {
		return 0, nil, errors.New("node: no answer for this round")
	}
	return wire.TypeAnswer, (&wire.Rows{Epoch: id, Round: q.Round, Slots: []uint32{sl}, Rows: ans}).Segments(), nil
}

// keepEvidence keeps the input batch of a void round for blame (§5.2,
// §8): public data, kept until the epoch is forgotten. Call with s.mu held.
func (e *sepoch) keepEvidence(r uint32, entries [][]byte) {
	if e.evidence == nil {
		e.evidence = map[uint32][][]byte{}
	}
	if _, ok := e.evidence[r]; !ok {
		cp := make([][]byte, len(entries))
		for i, x := range entries {
			cp[i] = append([]byte(nil), x...)
		}
		e.evidence[r] = cp
	}
}

// takeLayerBufs returns n buffers of size bytes for OpenLayerInto, reused
// from earlier rounds of the epoch when they fit.
func (e *sepoch) takeLayerBufs(n, size int) [][]byte {
	e.bufMu.Lock()
	bufs := e.layerBufs
	e.layerBufs = nil
	e.bufMu.Unlock()
	if len(bufs) != n || (n > 0 && cap(bufs[0]) < size) {
		slab := make([]byte, n*size)
		bufs = make([][]byte, n)
		for p := range bufs {
			bufs[p] = slab[p*size : (p+1)*size : (p+1)*size]
		}
	}
	for p := range bufs {
		bufs[p] = bufs[p][:size]
	}
	return bufs
}

// putLayerBufs hands buffers back after the batch made from them is sent.
func (e *sepoch) putLayerBufs(_ *Server, bufs [][]byte) {
	e.bufMu.Lock()
	e.layerBufs = bufs
	e.bufMu.Unlock()
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
