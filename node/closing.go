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
	"github.com/riffle-net/riffle/node/internal/closing"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/node/transport"
)

// The closing record of an epoch (docs/protocol.md §5.2 and §7 v3). Once
// an epoch has ended, its first chain server S_0 proposes, for each round,
// whether its final request list was published, void or never came, with
// the digest of the list; every chain server signs only what agrees with
// the lists it holds or signed, once its own epoch has ended, one record
// an epoch (another proposal is refused), and sends its signature to S_0 and to every other chain server (ClosingSig), so
// that each assembles the record itself once it holds every position's
// signature; S_0 hands the record with all m signatures to every chain
// server, which checks the signatures, stores it and logs it in the index
// log, so that clients get it with their index sync. A client carries a chunk over to another
// epoch only on a record that shows its round void or its id missing
// (node/client/resend.go), and draws decoys only from epochs with a record (node/client/decoys.go).

// closingRounds is what this server holds of epoch e's rounds for its
// closing record; call with s.mu held.
func closingRounds(e *sepoch) []closing.Round {
	rounds := make([]closing.Round, e.final.Desc.Params.Rounds)
	for r := range rounds {
		if x := e.rounds[uint32(r)]; x != nil {
			rounds[r] = closing.Round{Final: closing.Final(x.list), Signed: wire.ClosingRound{State: x.signedState, List: x.signed}}
		}
	}
	return rounds
}

// closingOf is this server's view of epoch e's rounds; call with s.mu
// held.
func closingOf(e *sepoch) wire.Closing { return closing.Of(e.final.ID, closingRounds(e)) }

// closingTries bounds S_0's proposals of one closing record, closingRetry
// apart: a chain server it cannot reach at the epoch's end (a partition,
// a lossy link) signs once it is back. Proposed once, the record of an
// epoch whose rounds all published was lost to a partition of 7 s, and
// the servers outside its chain never took its files, which clients had
// seen published (the swarm's seed 9; TestClosingProposedAgain).
// An epoch without its closing record stays in memory (forget) for
// closingHold after its end, at most closingHeld of them beyond the two
// newest ended epochs every server keeps, so that its servers can still
// sign what S_0 proposes again.
const (
	// ClosingSignedFile holds, in a data directory, the digest of the
	// closing record this server signed for each recent epoch (JSON;
	// package closing).
	ClosingSignedFile = closing.File

	closingTries = 4
	closingRetry = 10 * time.Second
	closingHold  = 2 * time.Minute
	closingHeld  = 4
)

// closings drives this server's side of its epochs' closing records
// (package closing): the one record it signs for each epoch (signed, on
// disk first), S_0's proposal, the chain's signatures, the record
// assembled, checked and stored. Each epoch's part is sepoch.closing,
// under its own lock; the rounds it reads are under Server.mu.
type closings struct {
	host    closingHost
	mu      *sync.Mutex
	ctx     context.Context
	log     *slog.Logger
	store   ChunkStore
	priv    crypto.PrivKey
	self    peer.ID
	wg      *sync.WaitGroup
	dataDir string
	hooks   hookSrc
	signed  closing.Signed
}

// closingHost is what the closing records take from the rest of the
// server.
type closingHost interface {
	epochFor(id [32]byte) (*sepoch, error)
	waitFor(ctx context.Context, cond func() bool) error
	each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error)
	keepWindowItem(e *sepoch, c *wire.Closing, rec []byte)
}

// init makes c the server's side of the closing records, with the ones
// it signed (loaded from its directory).
func (c *closings) init(s *Server, recs []closing.Choice) {
	c.host, c.mu, c.ctx, c.log, c.store, c.priv, c.self, c.wg = s, &s.mu, s.ctx, s.log, s.store, s.priv, s.h.ID(), &s.wg
	c.dataDir, c.hooks = s.cfg.DataDir, newHookSrc(s)
	c.signed.Loaded(recs)
}

// closeEpoch is closings.propose (epoch.go's name).
func (s *Server) closeEpoch(e *sepoch) { s.closing.propose(e) }

// propose runs at S_0 once epoch e has ended: it waits for the lists it
// still proposes, then has every chain server sign the closing record and
// delivers it.
func (c *closings) propose(e *sepoch) {
	ctx, cancel := context.WithTimeout(c.ctx, transport.BulkTimeout)
	defer cancel()
	if err := c.host.waitFor(ctx, func() bool { return e.listing == 0 }); err != nil {
		return
	}
	v := e.final
	c.mu.Lock()
	rec := closingOf(e)
	_, _ = setPool(e, &rec) // S_0 holds the lists it states
	c.mu.Unlock()
	if c.hooks.cfg().WithholdClosing(&rec) {
		return // broken on purpose: no closing record
	}
	prop := wire.ClosingProposal{Closing: rec}
	var reps [][]byte
	for try := 1; ; try++ {
		actx, acancel := context.WithTimeout(c.ctx, transport.BulkTimeout)
		var err error
		reps, err = c.host.each(actx, v.Chain, transport.Request{Proto: ProtoRound, Type: wire.TypeClosingProposal, Body: prop.Marshal(), Timeout: transport.BulkTimeout})
		acancel()
		if err == nil {
			break
		}
		if try == closingTries {
			c.log.Warn("closing record refused", "epoch", fmt.Sprintf("%x", v.ID[:6]), "err", err)
			return
		}
		c.log.Info("closing record refused: proposed again", "epoch", fmt.Sprintf("%x", v.ID[:6]), "err", err)
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(closingRetry):
		}
	}
	ctx, cancel = context.WithTimeout(c.ctx, transport.BulkTimeout)
	defer cancel()
	sigs, err := roundstep.ChainSigs(reps)
	if err != nil {
		c.log.Warn("closing record: bad signature", "epoch", fmt.Sprintf("%x", v.ID[:6]))
		return
	}
	rec.Sigs = sigs
	if _, err := c.host.each(ctx, c.hooks.run().ClosingTo(v.Chain), transport.Request{Proto: ProtoRound, Type: wire.TypeClosing, Body: rec.Marshal(), Timeout: transport.BulkTimeout}); err != nil {
		c.log.Warn("deliver closing record", "epoch", fmt.Sprintf("%x", v.ID[:6]), "err", err)
	}
}

// peek checks a closing message's sender, the epoch's S_0, before its
// body is decoded.
func (c *closings) peek(from peer.ID, body []byte) (*sepoch, error) {
	if len(body) < 32 {
		return nil, errors.New("node: closing message too short")
	}
	e, err := c.host.epochFor([32]byte(body[:32]))
	if err != nil {
		return nil, err
	}
	if e.final.Chain[0] != from {
		return nil, errors.New("node: closing message not from the epoch's first server")
	}
	return e, nil
}

// onProposal signs S_0's closing record of an epoch once the epoch has
// ended here, if every round agrees with what this server holds: a round
// stated published or void has the list this server holds or signed, and
// a round stated without a list has no final list here.
func (c *closings) onProposal(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	e, err := c.peek(from, body)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	var p wire.ClosingProposal
	if err := p.Unmarshal(body, int(v.Desc.Params.Rounds)); err != nil {
		return 0, nil, err
	}
	if len(p.Rounds) != int(v.Desc.Params.Rounds) {
		return 0, nil, fmt.Errorf("node: closing of %d rounds for %d", len(p.Rounds), v.Desc.Params.Rounds)
	}
	if err := c.host.waitFor(ctx, func() bool { return e.ended }); err != nil {
		return 0, nil, errors.New("node: closing proposed for an epoch still running here")
	}
	c.mu.Lock()
	rounds := closingRounds(e)
	if err := closing.Check(rounds, p.Rounds); err != nil {
		c.mu.Unlock()
		return 0, nil, err
	}
	// §6.3 v3: the pool is computed here from the lists held or signed.
	mine := closing.Of(v.ID, rounds)
	mine.Rounds = p.Rounds
	_, ok := setPool(e, &mine)
	c.mu.Unlock()
	if !ok || mine.Pairs != p.Pairs || mine.Pool != p.Pool {
		return 0, nil, errors.New("node: closing record's decoy pool differs from the lists held here")
	}
	// One record an epoch (§7 v3): this server signs one proposal of
	// an epoch and refuses any other, so that no two records of one
	// epoch carry every signature. S_0 that withheld a final list could
	// otherwise have its chain sign the round as never come and, once
	// the list came, as published: two valid records, one kept by the
	// servers and another pinned, whose pools disagree (issue 26, F2).
	// The choice is on disk before the signature is made
	// (closing.Signed), so that it outlives a crash.
	dg := proto.ClosingDigest(&p.Closing)
	if chosen := e.closing.Mine(); chosen != nil {
		if proto.ClosingDigest(chosen) != dg {
			return 0, nil, errors.New("node: another closing record of this epoch was signed here")
		}
	} else {
		if err := c.signed.Take(c.dataDir, v.Desc.Number, v.ID, dg); err != nil {
			return 0, nil, err
		}
		e.closing.Choose(p.Closing)
	}
	sig, err := proto.Sign(c.priv, dg)
	if err != nil {
		return 0, nil, err
	}
	// §7 (v3): the signature goes to every chain server too, so that
	// each assembles the record whoever S_0 hands it to.
	cs := wire.ClosingSig{Epoch: v.ID, Digest: dg, Index: uint16(e.pos), Sig: sig}
	e.closing.NoteOwn(cs)
	c.assemble(e)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var to []peer.ID
		for _, q := range c.hooks.run().ClosingSigTo(v.Chain) {
			if q != c.self {
				to = append(to, q)
			}
		}
		ctx, cancel := context.WithTimeout(c.ctx, transport.BulkTimeout)
		defer cancel()
		_, _ = c.host.each(ctx, to, transport.Request{Proto: ProtoRound, Type: wire.TypeClosingSig, Body: cs.Marshal(), Timeout: transport.ShortTimeout})
	}()
	return wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
}

// onSig keeps a chain server's signature of an epoch's closing record,
// checked against its sender's key, and assembles the record once every
// position signed the one this server signed.
func (c *closings) onSig(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var cs wire.ClosingSig
	if err := cs.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := c.host.epochFor(cs.Epoch)
	if err != nil {
		return 0, nil, err
	}
	if int(cs.Index) >= len(e.final.Chain) || e.final.Chain[cs.Index] != from {
		return 0, nil, errors.New("node: closing signature from another position")
	}
	if err := proto.VerifyPeerSig(from, cs.Digest, cs.Sig); err != nil {
		return 0, nil, err
	}
	e.closing.Note(cs)
	c.assemble(e)
	return wire.TypeAck, ack, nil
}

// assemble stores epoch e's closing record, as onRecord would, once every
// chain position's signature of the record this server signed is here.
func (c *closings) assemble(e *sepoch) {
	rec, ok := e.closing.Assemble(len(e.final.Chain))
	if !ok {
		return
	}
	c.mu.Lock()
	whole := closing.Whole(closingRounds(e), &rec)
	c.mu.Unlock()
	if _, err := c.store.Closing(rec.Epoch); err == nil {
		return // S_0's came first
	}
	raw := rec.Marshal()
	if whole {
		if err := c.store.PutClosing(rec.Epoch, raw); err != nil {
			c.log.Warn("keep the assembled closing record", "err", err)
			return
		}
		e.closing.SetClosed()
	}
	c.host.keepWindowItem(e, &wire.Closing{Epoch: rec.Epoch, Rounds: rec.Rounds}, raw)
}

// onRecord stores an epoch's closing record signed by all its chain
// servers, as assemble does (among the closing records only if whole
// here), and logs it in the index log.
func (c *closings) onRecord(from peer.ID, body []byte) (wire.Type, []byte, error) {
	e, err := c.peek(from, body)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	var rec wire.Closing
	if err := rec.Unmarshal(body, int(v.Desc.Params.Rounds)); err != nil {
		return 0, nil, err
	}
	if err := proto.CheckClosing(v, &rec); err != nil {
		return 0, nil, err
	}
	c.mu.Lock()
	whole := closing.Whole(closingRounds(e), &rec)
	c.mu.Unlock()
	if !whole {
		c.host.keepWindowItem(e, &wire.Closing{Epoch: rec.Epoch, Rounds: rec.Rounds}, body)
		return wire.TypeAck, ack, nil
	}
	if err := c.store.PutClosing(rec.Epoch, body); err != nil {
		return 0, nil, err
	}
	e.closing.SetClosed()
	c.host.keepWindowItem(e, &wire.Closing{Epoch: rec.Epoch, Rounds: rec.Rounds}, body)
	return wire.TypeAck, ack, nil
}
