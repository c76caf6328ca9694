package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/pubfetch"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/node/transport"
)

// mixDepth is how many rounds may be in the chain at once: S_0 mixes round
// r once round r−mixDepth is published here, so that its sending of r
// overlaps the later servers' work on r−1, as well as the PIR of earlier
// rounds. With the cover window W = 2 the onions of r are in by then.
const mixDepth = 2

// mixer is the mix path (§5.2): S_0's round driver (mixLoop), this
// server's layer of a round (mixStep) and the batches that come to it
// (onBatch). The rounds' state is the epoch's (sepoch), under mu, the
// server's lock; the rest of the server is reached through host.
type mixer struct {
	host   mixHost
	mu     *sync.Mutex
	ctx    context.Context
	h      transport.Host
	priv   crypto.PrivKey
	log    *slog.Logger
	timing *Tunables
	pub    *pubfetch.Service
	pool   *transport.BufPool // round buffers, shared with the handlers
	wg     *sync.WaitGroup
	spent  *timer
	hooks  hookSrc
}

// mixHost is what the mix path takes from the rest of the server: the
// waits on the epoch's state, the round blame (§8) a fault starts or a
// missing round asks for, and the publication.
type mixHost interface {
	waitFor(ctx context.Context, cond func() bool) error
	epochFor(id [32]byte) (*sepoch, error)
	roundFacts(e *sepoch) roundstep.Facts
	trace(stage string, r uint32) func()
	awaitPace(e *sepoch) bool
	awaitSetup(e *sepoch) bool
	awaitSettled(e *sepoch, t int) ([]int, bool)
	each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error)

	accuse(e *sepoch, r uint32, pos int)
	voidRound(e *sepoch, r uint32) bool
	askDries(e *sepoch, r uint32) bool
	noteRoot(e *sepoch, r *wire.Root) bool
	announceRoot(e *sepoch, b *wire.Batch)
	keepOut(e *sepoch, r uint32, b *wire.Batch)
	noteBadBatch(e *sepoch, t int, r uint32, body []byte)
	publish(e *sepoch, r uint32, payloads [][]byte, ph *roundstep.Hashes)

	// Under mu.
	end(e *sepoch, reason string)
	endUnfilled(e *sepoch, r uint32)
	endNoPub(e *sepoch, q uint32, reason string)
}

// newMixer is the server's mix path.
func newMixer(s *Server) mixer {
	return mixer{host: s, mu: &s.mu, ctx: s.ctx, h: s.h, priv: s.priv, log: s.log, timing: &s.cfg.Timing,
		pub: s.pub, pool: &s.pool, wg: &s.wg, spent: &s.timing, hooks: newHookSrc(s)}
}

// onBatch is the mix path's, for the round blame's fetches (lack.go) and
// the publications fetched from the chain (pubfetch.go).
func (s *Server) onBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
	return s.mixing.onBatch(from, body)
}

// mixLoop is S_0's round driver: round r is mixed once every slot has a
// signed onion for it and round r-1 has been published, so that the upload
// and mixing of r overlap the PIR of r-1 (pipelining).
func (m *mixer) mixLoop(e *sepoch) {
	p := e.final.Desc.Params
	limit := time.Duration(p.RoundLimitMs) * time.Millisecond
	n := e.n()
	bb, k := e.bk()
	onionSize := mix.OnionSize(bb, k, len(e.final.Chain))
	for r := uint32(0); r < p.Rounds; r++ {
		ctx, cancel := context.WithTimeout(m.ctx, limit)
		var ins [][]byte
		var sigs [][64]byte
		var hashes [][32]byte
		err := m.host.waitFor(ctx, func() bool {
			if e.ended || !e.setupDone {
				return e.ended
			}
			var ok bool
			ins, sigs, hashes, ok = mixInputStep(&e.roundsState, r, n, onionSize, e.blames.DeadIn(0))
			return ok
		})
		cancel()
		if err != nil || ins == nil {
			// §5.2 v3: a round whose publication never came is signed
			// void by every server, once an epoch, and the epoch goes
			// on; round r waits again.
			if r >= mixDepth && m.ctx.Err() == nil {
				if missing, came := m.pubMissing(e, r-mixDepth); came || (missing && m.host.voidRound(e, r-mixDepth)) {
					r--
					continue
				}
			}
			// §5.4: the primaries of its empty slots say them dry
			// (held.go), or send their onions again.
			if m.ctx.Err() == nil && m.host.askDries(e, r) {
				r--
				continue
			}
			m.mu.Lock()
			// §5.4: a round that cannot be filled ends the epoch.
			m.host.endUnfilled(e, r)
			m.mu.Unlock()
			return
		}
		m.mixStep(e, r, ins, sigs, hashes)
		m.pub.Watch(pubEpoch(e), r)
	}
	m.awaitLastRounds(e)
}

// awaitLastRounds waits, after the epoch's last round is mixed, for the
// publication of its last mixDepth rounds, which no later round's wait
// covers: each gets the round limit, as if rounds R and R+1 were to be
// mixed. The first still missing is signed void (one void an epoch, §5.2
// v3); a void last round ends the epoch as complete (onRoundList), an
// earlier one lets the last round's PIR end it, and a second missing one
// ends the epoch with an abort for the missing publication, charged to the
// last server (§3). Without this wait a last server that kept one of the
// two last rounds left the epoch, and with it every server and client of
// the chain, waiting for ever. S_0 only.
func (m *mixer) awaitLastRounds(e *sepoch) {
	p := e.final.Desc.Params
	limit := time.Duration(p.RoundLimitMs) * time.Millisecond
	for q := max(p.Rounds, mixDepth) - mixDepth; q < p.Rounds; q++ {
		ctx, cancel := context.WithTimeout(m.ctx, limit)
		err := m.host.waitFor(ctx, func() bool {
			x := e.round(q)
			return e.ended || x.pubDone || x.void
		})
		cancel()
		if m.ctx.Err() != nil {
			return
		}
		if err == nil {
			m.mu.Lock()
			ended := e.ended
			m.mu.Unlock()
			if ended {
				return
			}
			continue
		}
		missing, came := m.pubMissing(e, q)
		if came || (missing && m.host.voidRound(e, q)) {
			continue
		}
		m.mu.Lock()
		if !e.ended {
			m.host.endNoPub(e, q, fmt.Sprintf("epoch's end: no publication of round %d", q))
		}
		m.mu.Unlock()
		return
	}
}

// pubMissing waits, before S_0 claims round q's publication missing,
// until every part of q is due here and a quarter of a round limit more,
// so that the others' dues, counted from their own opening of the round,
// have passed too and they attest what is missing (charges.go). missing:
// the publication is still missing (the epoch running); came: it came
// (or the round turned void) during this wait. S_0 only.
func (m *mixer) pubMissing(e *sepoch, q uint32) (missing, came bool) {
	gone := func() bool {
		x := e.round(q)
		return x.pubDone || x.void
	}
	m.mu.Lock()
	due := e.absenceDue(q)
	was := gone()
	m.mu.Unlock()
	if was {
		return false, false
	}
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	settle, end := pubClaimTimes(due, limit, time.Now())
	if !settle.IsZero() {
		ctx, cancel := context.WithDeadline(m.ctx, settle)
		_ = m.host.waitFor(ctx, func() bool { return e.ended || gone() })
		cancel()
	}
	// A publication that reached other chain servers and not this one
	// is fetched from them (pubfetch.go): the last server does not make
	// S_0 claim what others hold, which they would not back. The watch
	// began fetching it once it was due (pubfetch.Service.Watch); once that is over,
	// the holders are asked once more, should they have taken it since.
	// A holder that does not answer delays the claim a round limit (in
	// all: the watch's fetch and this one).
	ctx, cancel := context.WithDeadline(m.ctx, end)
	if watch := e.pubs.Watch(q); watch != nil {
		select {
		case <-watch:
		case <-ctx.Done():
		}
	}
	fetched := m.pub.Fetch(ctx, pubEpoch(e), q, e.final.Chain)
	cancel()
	if fetched {
		ctx, cancel := context.WithTimeout(m.ctx, transport.BulkTimeout)
		_ = m.host.waitFor(ctx, func() bool { return e.ended || gone() })
		cancel()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.ended || m.ctx.Err() != nil {
		return false, false
	}
	return !gone(), gone()
}

// mixStep opens this server's layer of round r at every input position,
// permutes by π_s and passes the batch on (§5.2). It drives
// roundstep.LayerFault and SealBatch (internal/roundstep): it waits, opens the layer and sends.
func (m *mixer) mixStep(e *sepoch, r uint32, in [][]byte, clientSigs [][64]byte, clientHashes [][32]byte) {
	if !m.host.awaitPace(e) {
		return
	}
	defer m.host.trace("mixStep", r)()
	m.hooks.cfg().Stage(e.final.ID, r, "mix")
	ep := m.host.roundFacts(e)
	if !m.host.awaitSetup(e) {
		return
	}
	m.mu.Lock()
	rk, U, fwd := e.rk, e.U, e.forward
	ok := e.acquire()
	m.mu.Unlock()
	if !ok {
		return
	}
	defer func() {
		m.mu.Lock()
		e.release()
		m.mu.Unlock()
	}()
	mixStart := time.Now()
	keys, err := mix.ServerLayerKeys(mix.EpochID(ep.ID), e.pos, uint64(r), rk, U)
	if err != nil {
		m.roundFault(e, r, roundstep.Fx{End: "layer keys"}, err)
		return
	}
	// Decrypt into this epoch's reused buffers (never in place: the input
	// is the predecessor's signed batch, the evidence of a blame). A
	// round blame under way is waited for: its dead slot, if it names a
	// client, is absent from this round too (deadslot.go).
	bufs := e.layers.Take(len(in), len(in[0])-mix.TagSize)
	defer e.layers.Put(bufs)
	dead, live := m.host.awaitSettled(e, e.pos)
	if !live {
		mix.CloseLayerKeys(keys)
		return
	}
	out, err := mix.OpenLayerSkipInto(bufs, mix.EpochID(ep.ID), uint64(r), e.pos, keys, in, dead)
	if err == nil {
		if p, ok := m.hooks.run().Accuse(r); ok {
			err = &mix.MACError{Server: e.pos, Round: uint64(r), Positions: []int{p}}
		}
	}
	var me *mix.MACError
	if errors.As(err, &me) {
		// A blame that started meanwhile (this round was in flight) may
		// name the failing position's client: once it settles, the
		// round opens again without the dead positions.
		// What still fails then is walked (a second culprit).
		if now, ok := m.host.awaitSettled(e, e.pos); ok && len(now) > len(dead) {
			out, err = mix.OpenLayerSkipInto(bufs, mix.EpochID(ep.ID), uint64(r), e.pos, keys, in, now)
		}
	}
	mix.CloseLayerKeys(keys)
	if err != nil {
		m.roundFault(e, r, roundstep.LayerFault(ep, r, in, err), err)
		return
	}
	out = mix.Permute(fwd, out)
	m.hooks.run().CorruptOut(r, out)
	if m.hooks.run().DropOut(r) {
		out = out[:len(out)-1]
	}
	m.spent.add(&m.spent.mix, time.Since(mixStart))
	sd, err := roundstep.SealBatch(ep, m.priv, r, out, clientSigs, clientHashes)
	if err != nil {
		m.roundFault(e, r, roundstep.Fx{End: "sign batch"}, err)
		return
	}
	m.host.announceRoot(e, &sd.Batch)
	m.sendBatch(e, r, &sd)
}

// roundFault does what a step's fault asks: keeps the round's evidence
// (copied before s.mu is taken), then starts a MAC blame or ends the
// epoch (err is logged).
func (m *mixer) roundFault(e *sepoch, r uint32, fx roundstep.Fx, err error) {
	var ev [][]byte
	if fx.Evidence != nil {
		ev = copyEntries(fx.Evidence)
	}
	if fx.Accuse > 0 {
		m.mu.Lock()
		e.keepCopied(r, ev)
		m.mu.Unlock()
		m.host.accuse(e, r, fx.Accuse-1)
		return
	}
	m.log.Warn("round void", "round", r, "err", err)
	m.mu.Lock()
	if ev != nil {
		e.keepCopied(r, ev)
	}
	m.host.end(e, fx.End)
	m.mu.Unlock()
}

// sendBatch sends a sealed batch where it goes. The last server's
// payloads go to every other server while it publishes its own output in
// place: no copy of the batch, no second Merkle root of what it has just
// signed; the buffers stay ours until both are done. A middle batch is
// kept for the fetches of its receiver and of the servers its receiver
// asks to relay it (§5.2 v3, lack.go).
func (m *mixer) sendBatch(e *sepoch, r uint32, sd *roundstep.Sealed) {
	ctx, cancel := context.WithTimeout(m.ctx, transport.BulkTimeout)
	defer cancel()
	req := transport.Request{Proto: ProtoRound, Type: wire.TypeBatch, Segments: sd.Batch.Segments(), Timeout: transport.BulkTimeout}
	if sd.Publish {
		m.hooks.cfg().LastOut(e.final.ID, r, sd.Batch.Entries)
		if m.hooks.run().Withhold(r) {
			return
		}
		sent := make(chan error, 1)
		go func() {
			// Retried within the round limit: a publication lost on its
			// way to one server would leave that server without the
			// round's chunks for good, while the others serve them
			// (TestSwarm seed 3). A repeat is acknowledged like the first.
			rctx, rcancel := context.WithTimeout(ctx, time.Duration(e.final.Desc.Params.RoundLimitMs)*time.Millisecond)
			err := deliverAll(rctx, sd.To, m.timing.EvidenceBackoff, m.timing.EvidenceBackoffMax, func(ctx context.Context, p peer.ID) error {
				if d := m.hooks.run().PubLate(r, p); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				_, err := transport.Call(ctx, m.h, p, req)
				return err
			})
			rcancel()
			if err == nil && m.hooks.run().RepeatOut(r) {
				_, err = m.host.each(ctx, sd.To, req)
			}
			sent <- err
		}()
		m.host.publish(e, r, sd.Batch.Entries, sd.PH)
		if err := <-sent; err != nil {
			m.log.Warn("publish", "round", r, "err", err)
		}
		return
	}
	if m.hooks.run().HideOut(r) {
		return // withheld: neither sent nor kept for a fetch
	}
	if d := m.hooks.run().LateOut(r); d > 0 {
		// Late, and kept from every fetch meanwhile (test).
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return
		}
	}
	// Kept for the fetches of the successor and of the servers it asks
	// to relay the batch (lack.go), whether or not it takes it now.
	m.host.keepOut(e, r, &sd.Batch)
	var err error
	switch {
	case m.hooks.run().LoseOut(r):
		err = errors.New("lost in transit (test)")
	case m.hooks.run().RefuseSucc(r):
		return // withheld from the successor alone (test)
	default:
		m.mu.Lock()
		e.round(r).sending = true
		m.mu.Unlock()
		_, err = transport.Call(ctx, m.h, sd.To[0], req)
		m.mu.Lock()
		e.round(r).sending = false
		m.mu.Unlock()
	}
	if err != nil {
		// The successor fetches what it did not get, from here or
		// from the servers it asks to relay it.
		m.log.Warn("forward batch: kept for a fetch", "round", r, "err", err)
		return
	}
	if m.hooks.run().RepeatOut(r) {
		_, _ = transport.Call(ctx, m.h, sd.To[0], req)
	}
}

// onBatch takes a signed batch from the server before this one, or the
// last server's publication: the driver of roundstep.CheckBatchHead,
// batchHeadStep and batchStep (roundstep.go).
func (m *mixer) onBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
	// Sender, epoch and signature are checked on the head alone, before
	// the body costs anything: only then are entries rebuilt, bounded by
	// this epoch's limits (§5.2; only a signed batch is evidence against
	// its sender).
	h, err := wire.PeekBatch(body)
	if err != nil {
		return 0, nil, err
	}
	e, err := m.host.epochFor(h.Epoch)
	if err != nil {
		return 0, nil, err
	}
	ep := m.host.roundFacts(e)
	if err := roundstep.CheckBatchHead(ep, from, h); err != nil {
		return 0, nil, err
	}
	if m.hooks.run().DropIn(h.Round) && int(h.S) == e.pos {
		return wire.TypeAck, ack, nil
	}
	m.mu.Lock()
	next, fx := batchHeadStep(ep, &e.roundsState, h)
	m.mu.Unlock()
	switch next {
	case roundstep.Refused:
		return 0, nil, fx.Refuse
	case roundstep.Ack:
		return wire.TypeAck, ack, nil
	case roundstep.Repeat:
		return m.repeatBatch(e, h)
	}
	// Entries sent without their zero padding are rebuilt in recycled
	// buffers (a published round of covers is n·b bytes rebuilt).
	var b wire.Batch
	var rebuilt [][]byte
	alloc := func(n int) []byte {
		x := m.pool.Get(n)
		rebuilt = append(rebuilt, x)
		return x
	}
	lim := proto.LimitsFor(ep.Params, ep.M())
	lim.Frame = roundCaps(wire.TypeBatch)
	if err := b.UnmarshalAlloc(body, lim, alloc); err != nil {
		return 0, nil, err
	}
	if !m.host.noteRoot(e, &wire.Root{Epoch: b.Epoch, Round: b.Round, S: b.S, Root: b.Root, Sig: b.Sig}) {
		return wire.TypeAck, ack, nil
	}
	root, ph := roundstep.BatchRoot(ep, &b)
	m.mu.Lock()
	next, fx = batchStep(ep, &e.roundsState, &b, root, time.Now())
	if next == roundstep.Publish {
		// Kept for a chain server the last server left without it. It
		// also shows that every server passed the round on: this
		// server's own batch of it need not be kept any longer (lack.go
		// passedOn; a noted server asks for the publication then).
		e.pubs.Keep(b.Round, body)
		e.round(b.Round).kept = nil
	}
	if next == roundstep.Fault {
		e.keepEvidence(b.Round, fx.Evidence)
		m.host.end(e, fx.End)
		m.host.noteBadBatch(e, fx.BadFrom-1, b.Round, body)
	}
	m.mu.Unlock()
	switch next {
	case roundstep.Refused:
		return 0, nil, fx.Refuse
	case roundstep.Mix, roundstep.Publish:
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.runBatch(e, &b, ph, append(rebuilt, body))
		}()
	}
	return wire.TypeAck, ack, nil
}

// runBatch mixes or publishes a batch that batchStep took. The body and
// the rebuilt entries (bufs: every entry lives in one) go back to the
// pool once the round's work here is done; a mixing server's input batch
// stays until the round is published here, the evidence of a later
// fault's walk (roundblame.go).
func (m *mixer) runBatch(e *sepoch, b *wire.Batch, ph *roundstep.Hashes, bufs [][]byte) {
	S := int(b.S)
	chain := len(e.final.Chain)
	held := false
	if S < chain {
		m.mu.Lock()
		held = e.holdInput(b.Round, b.Entries, bufs)
		m.mu.Unlock()
	}
	defer func() {
		if held {
			return
		}
		for _, x := range bufs {
			m.pool.Put(x)
		}
	}()
	// Dead slots carry no client signature; a blame under way may
	// have made one dead (deadslot.go).
	deadSlots, live := m.host.awaitSettled(e, 0)
	if !live {
		return
	}
	if err := roundstep.CheckClientSigs(e.final.Desc.Clients, b, deadSlots); err != nil {
		// §5.2 (v2): a slot without its client's signature is a fault
		// of the sender, who passed it on: void, evidence kept.
		m.roundFault(e, b.Round, roundstep.Fx{Evidence: b.Entries, End: fmt.Sprintf("round %d void: batch from server %d: %v", b.Round, S-1, err)}, err)
		return
	}
	if S < chain {
		m.mixStep(e, b.Round, b.Entries, b.ClientSigs, b.ClientHashes)
	} else {
		m.host.publish(e, b.Round, b.Entries, ph)
	}
}

// repeatBatch answers a signed batch for a round whose batch was taken:
// its root is recorded as any signed root is, so that a different root
// names its signer (equivocation), and the batch itself is dropped.
func (m *mixer) repeatBatch(e *sepoch, h wire.BatchHead) (wire.Type, []byte, error) {
	m.host.noteRoot(e, &wire.Root{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root, Sig: h.Sig})
	return wire.TypeAck, ack, nil
}
