package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/pubfetch"
	"github.com/riffle-net/riffle/node/transport"
)

// The noted server's side of a relayed batch (docs/protocol.md §5.2 v3,
// "a batch its receiver lacks is relayed"; the receiver's side, the lack
// and its claim are lack.go): the note a receiver's ask makes here, its
// bounds, the fetch from the signer and the copy handed on, and when a
// batch noted and not got counts as missing (bodyDue, for attest.go).

// relayNote is a noted server's state of one batch its receiver said it
// lacks: when the note came, the copy fetched from the signer (the raw
// signed batch) and when, and the copies handed to the receiver.
type relayNote struct {
	at, bodyAt time.Time
	body       []byte
	served     int
	done       bool // the fetch from the signer ended
}

// notesHeld bounds the relays of one position's batch (one receiver's
// notes) running here at once, over the rounds: a note counts until its
// round was passed on, made void or ended here, and the body it fetched
// is dropped then (a receiver that passed the round on had its input);
// one that holds no body counts until its fetch's own end (relayEnd),
// not until a signer that holds the fetch unanswered lets it go.
// A receiver noting every round without a lack made every server fetch
// and hold an extra n·b a round until the round was pruned, 8 rounds on
// (TestRelayNotesBounded). Two: the rounds a receiver may wait on at once
// (mixDepth).
const notesHeld = mixDepth

// batchServes bounds the copies of one round's batch that its signer, or
// a noted holder, hands to one chain position (a retry after a lost
// transfer, not a flood), as pubfetch.Serves does for the publication.
const batchServes = pubfetch.Serves

// bodyWait is how long a noted server may take to get the batch from its
// signer before it counts the batch missing (blame.Dues.BodyWait).
func bodyWait(e *sepoch) time.Duration { return e.dues().BodyWait() }

// bodyDue is when round q's batch j, noted by its receiver (n), counts as
// missing here if it has not come (blame.Dues.BodyDue). Call with s.mu
// held.
func (e *sepoch) bodyDue(q uint32, j int, n *relayNote) time.Time {
	return e.dues().BodyDue(e.times(q), j, n.times())
}

// relayEnd is when the fetch for a note (n) of round q's batch j ends here
// (blame.Dues.RelayEnd): a copy got later is of no use to the receiver,
// which has claimed the lack or passed the round on, and a fetch held
// open by its signer no longer holds a note of notesHeld. Call with s.mu
// held.
func (e *sepoch) relayEnd(q uint32, j int, n *relayNote) time.Time {
	return e.dues().RelayEnd(e.times(q), j, n.times())
}

func (n *relayNote) times() blame.Note { return blame.Note{At: n.at, BodyAt: n.bodyAt} }

func (x *sround) dropRelays() {
	x.kept, x.notes, x.keptServed = nil, nil, nil
}

// noteLocked is round q's relay note of position j's batch here, taken
// from its receiver's ask: once a round and part, only while the round is
// open here, the batch's signed root is here, its receiver has not passed
// its own part on (a receiver that did had its input) and the lack
// window, counted from the root, has not passed. A new note starts the
// fetch from the signer (relayFetch). Call with s.mu held.
func (s *Server) noteLocked(e *sepoch, q uint32, j int) (*relayNote, error) {
	x := e.round(q)
	if n := x.notes[j]; n != nil {
		return n, nil
	}
	if err := e.noteRefused(q, j); err != nil {
		return nil, err
	}
	if x.notes == nil {
		x.notes = map[int]*relayNote{}
	}
	n := &relayNote{at: time.Now()}
	x.notes[j] = n
	s.log.Info("relay asked: fetching the batch from its signer", "round", q, "position", j)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.relayFetch(e, q, j, n)
	}()
	return n, nil
}

// notesRunning counts the relays of position j's batch running here
// (notesHeld), and drops the bodies of those settled: their round passed
// on, void or ended. Call with s.mu held.
func (e *sepoch) notesRunning(j int) int {
	k := 0
	for q, x := range e.rounds {
		n := x.notes[j]
		if n == nil {
			continue
		}
		if e.ended || x.void || x.pruned || e.passedOn(q, j) {
			n.body = nil
			continue
		}
		if n.body != nil || (!n.done && time.Now().Before(e.relayEnd(q, j, n))) {
			k++
		}
	}
	return k
}

// dropNoted drops the body of round q's relayed batch j once its receiver
// passed the round on here (noteRoot). Call with s.mu held.
func (e *sepoch) dropNoted(q uint32, j int) {
	if x := e.rounds[q]; x != nil {
		if n := x.notes[j]; n != nil {
			n.body = nil
		}
	}
}

// noteRefused says why a relay note of round q's batch j is not taken
// here, nil if it is (noteLocked): its timing (blame.Dues.NoteLate), a
// receiver that passed the round on already, and notesHeld. Call with
// s.mu held.
func (e *sepoch) noteRefused(q uint32, j int) error {
	if err := e.dues().NoteLate(e.times(q), j, time.Now()); err != nil {
		return fmt.Errorf("node: round %d: %w", q, err)
	}
	if e.passedOn(q, j) {
		return fmt.Errorf("node: server %d passed round %d on", j+1, q)
	}
	if k := e.notesRunning(j); k >= notesHeld {
		return fmt.Errorf("node: %d relays of position %d's batch run here", k, j)
	}
	return nil
}

// relayFetch asks the signer of round q's batch j for it until its due
// (bodyDue; a transfer begun may end later, up to relayEnd) and keeps the
// first copy that checks (takeRelay).
func (s *Server) relayFetch(e *sepoch, q uint32, j int, n *relayNote) {
	defer func() {
		s.mu.Lock()
		n.done = true
		s.mu.Unlock()
	}()
	v := e.final
	signer := v.Chain[j]
	ref := (&wire.BatchRef{Epoch: v.ID, Round: q, S: uint16(j + 1)}).Marshal()
	s.mu.Lock()
	stop, end := e.bodyDue(q, j, n), e.relayEnd(q, j, n)
	s.mu.Unlock()
	gone := func() bool { return !n.bodyAt.IsZero() || e.ended || e.admit(q) != nil || e.round(q).void }
	for time.Now().Before(stop) && s.ctx.Err() == nil {
		ctx, cancel := context.WithDeadline(s.ctx, end)
		raw, err := transport.Call(ctx, s.h, signer, transport.Request{Proto: ProtoRound, Type: wire.TypeGetBatch, Body: ref, Timeout: time.Until(end), Max: wire.BatchCap(v.Lim)})
		cancel()
		if err == nil {
			if err = s.takeRelay(e, q, j, n, raw); err == nil {
				s.log.Info("batch fetched for its receiver", "round", q, "position", j)
				return
			}
		} else {
			// A signer that dropped its batch holds the round's
			// publication (keepOut): the proof that its receiver
			// passed the round on.
			ctx, cancel := context.WithDeadline(s.ctx, end)
			took := s.pub.Fetch(ctx, pubEpoch(e), q, []peer.ID{signer})
			cancel()
			if took {
				return
			}
		}
		s.log.Debug("relay fetch", "round", q, "position", j, "err", err)
		ctx, cancel = context.WithTimeout(s.ctx, min(reaskPause(e), max(time.Until(stop), 0)))
		_ = s.waitFor(ctx, gone)
		cancel()
		s.mu.Lock()
		g := gone()
		s.mu.Unlock()
		if g {
			return
		}
	}
}

// takeRelay checks a relayed copy of round q's batch j as if it came from
// its signer, and keeps it: the head (epoch, round, position, the
// signer's signature), the entries within the epoch's limits, the root
// recomputed from them, and the root against every root of the signer
// seen here (noteRoot: a second root is its equivocation).
func (s *Server) takeRelay(e *sepoch, q uint32, j int, n *relayNote, raw []byte) error {
	v := e.final
	h, err := wire.PeekBatch(raw)
	if err != nil {
		return err
	}
	if h.Epoch != v.ID || h.Round != q || int(h.S) != j+1 {
		return errors.New("node: relayed batch of another round or position")
	}
	if err := proto.VerifyPeerSig(v.Chain[j], batchDigest(&wire.Batch{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root}), h.Sig); err != nil {
		return err
	}
	var b wire.Batch
	if err := b.Unmarshal(raw, proto.LimitsFor(v.Desc.Params, len(v.Chain))); err != nil {
		return err
	}
	if proto.MerkleRoot(b.Entries) != b.Root {
		return errors.New("node: relayed batch's entries miss its signed root")
	}
	if !s.noteRoot(e, &wire.Root{Epoch: b.Epoch, Round: b.Round, S: b.S, Root: b.Root, Sig: b.Sig}) {
		return errors.New("node: relayed batch's signer equivocated")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.admit(q) != nil {
		return errors.New("node: round no longer kept")
	}
	n.body, n.bodyAt = raw, time.Now()
	s.wake()
	return nil
}

// passedOn reports whether the server at position j+1 passed round q on,
// as seen here: its signed root, or the round's publication, is here.
// Call with s.mu held.
func (e *sepoch) passedOn(q uint32, j int) bool {
	if x := e.rounds[q]; x != nil && (x.pubDone || x.publishing || x.batchIn[1]) {
		return true
	}
	if j+1 < len(e.final.Chain)-1 {
		_, ok := e.roots[rootKey{q, uint16(j + 2)}]
		return ok
	}
	return false
}

// bodyMissing reports, for round q's batch j whose receiver noted it
// lacks it here, that this server could not get it from its signer by its
// due, and since when that counts (blame.Dues.BodyMissing); false without
// a note, or once the receiver passed the round on. Call with s.mu held.
func (e *sepoch) bodyMissing(q uint32, j int) (time.Time, bool) {
	if x := e.rounds[q]; x == nil || x.notes[j] == nil || e.passedOn(q, j) {
		return time.Time{}, false
	}
	return e.dues().BodyMissing(e.times(q), j)
}
