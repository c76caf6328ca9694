package node

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestAbsenceDueOpenedByFirstPart: when S_0's signed part of a round opens
// the round here, the part counts as sent at the opening (docs/protocol.md
// §3), so S_1's part is due a hop after the opening. Before, the opening
// was stamped a moment after the part, which then counted as come before
// the opening, a round limit after it (partCame): S_1's part was due a
// round limit and a hop after the opening.
func TestAbsenceDueOpenedByFirstPart(t *testing.T) {
	const limit = 2 * time.Second
	desc := wire.Descriptor{Params: wire.Params{Rounds: 8, RoundLimitMs: uint32(limit / time.Millisecond)}}
	v := &proto.View{Desc: &desc, ID: [32]byte{7}, Chain: []peer.ID{"a", "b", "c"}}
	e := &sepoch{v: v, final: v, pos: 2}
	s := &Server{changed: make(chan struct{})}
	if !s.noteRoot(e, &wire.Root{Epoch: v.ID, Round: 5, S: 1, Root: [32]byte{1}}) {
		t.Fatal("root refused")
	}
	open, ok := e.openAt[5]
	if !ok {
		t.Fatal("S_0's part did not open the round")
	}
	if at, ok := e.partCame(5, 0); !ok || !at.Equal(open) {
		t.Fatalf("S_0's part counts as come %v after the opening, want at it", at.Sub(open))
	}
	due := e.absenceDue(5)
	hop := lackWindow(e)
	if want := open.Add(hop); !due[1].Equal(want) {
		t.Fatalf("S_1's part due %v after the opening, want %v (a hop)", due[1].Sub(open), hop)
	}
	if want := open.Add(2 * hop); !due[2].Equal(want) {
		t.Fatalf("the publication due %v after the opening, want %v", due[2].Sub(open), 2*hop)
	}
}

// TestNoteWithinKeptCopy (issue 25, the batch relay): this server (S_3 of
// four) gets S_1's root of a round before the round opens here (S_0's
// part, which would open it, kept from here), and the round opens two
// round limits later. The dues count S_1's part as come a round limit
// after that opening (partCame), and the relay note of S_1's batch was
// taken, and its body due, from then: long after S_1 dropped its kept copy
// (keptWindow after it sent it), so that the noted server found none and
// counted the honest signer's batch missing. Now a note must come, and the
// body is due, within the signer's kept window counted from the root's
// arrival here.
func TestNoteWithinKeptCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 2 * time.Second
		desc := wire.Descriptor{Params: wire.Params{Rounds: 8, RoundLimitMs: uint32(limit / time.Millisecond)}}
		v := &proto.View{Desc: &desc, ID: [32]byte{7}, Chain: []peer.ID{"a", "b", "c", "d"}}
		e := &sepoch{v: v, final: v, pos: 3}
		e.rounds = map[uint32]*sround{}
		s := &Server{changed: make(chan struct{})}
		if !s.noteRoot(e, &wire.Root{Epoch: v.ID, Round: 5, S: 2, Root: [32]byte{1}}) {
			t.Fatal("root refused")
		}
		root := time.Now()
		time.Sleep(2 * limit)
		e.opened(5)
		came, _ := e.partCame(5, 1)
		kept := root.Add(keptWindow(e))
		t.Logf("S_1's root came here at 0, the round opened at %v, the part counts as come at %v; S_1's copy kept until %v at most", 2*limit, came.Sub(root), kept.Sub(root))
		if err := e.noteRefused(5, 1); err == nil {
			t.Errorf("a note %v after the root taken: S_1 kept its copy %v", time.Since(root), keptWindow(e))
		}
		n := &relayNote{at: root.Add(fetchGrace(e))}
		if due := e.bodyDue(5, 1, n); !due.Before(kept) {
			t.Errorf("the body of an early note due %v after the root, past the signer's copy (%v)", due.Sub(root), keptWindow(e))
		}
	})
}

// TestNotesHeldPerReceiver (issue 25, the batch relay): S_1 (of three) has
// relay notes of S_0's batch running here for two rounds; a third round's
// note is refused until one of them is settled. Once S_1 passes round 5
// on (its root comes), that note's copy is dropped and the third note is
// taken.
func TestNotesHeldPerReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 2 * time.Second
		desc := wire.Descriptor{Params: wire.Params{Rounds: 8, RoundLimitMs: uint32(limit / time.Millisecond)}}
		v := &proto.View{Desc: &desc, ID: [32]byte{7}, Chain: []peer.ID{"a", "b", "c"}}
		e := &sepoch{v: v, final: v, pos: 2}
		e.rounds = map[uint32]*sround{}
		s := &Server{changed: make(chan struct{})}
		for q := uint32(5); q <= 7; q++ {
			if !s.noteRoot(e, &wire.Root{Epoch: v.ID, Round: q, S: 1, Root: [32]byte{byte(q)}}) {
				t.Fatal("root refused")
			}
		}
		for q := uint32(5); q <= 6; q++ {
			if err := e.noteRefused(q, 0); err != nil {
				t.Fatalf("round %d's note refused: %v", q, err)
			}
			e.round(q).notes = map[int]*relayNote{0: {at: time.Now(), body: []byte{1}, bodyAt: time.Now()}}
		}
		err := e.noteRefused(7, 0)
		t.Logf("a third round's note with two running: %v", err)
		if err == nil {
			t.Fatalf("a third note of one receiver taken with %d running", notesHeld)
		}
		if !s.noteRoot(e, &wire.Root{Epoch: v.ID, Round: 5, S: 2, Root: [32]byte{9}}) {
			t.Fatal("root refused")
		}
		if e.rounds[5].notes[0].body != nil {
			t.Error("round 5's relayed copy kept after S_1 passed the round on")
		}
		if err := e.noteRefused(7, 0); err != nil {
			t.Errorf("the third note once round 5 was passed on: %v", err)
		}
	})
}

// TestNoteReleasedAtFetchEnd (issue 25, the batch relay): S_1 (of three)
// has relay notes of S_0's batch running here for two rounds, each fetch
// held unanswered by S_0 (no body, not done). A third round's note is
// refused while they run, and taken once their fetches' own end
// (relayEnd) has passed. Before, a fetch that its signer held open counted
// until the call's keptWindow timeout let it go, and here, never done, for
// good.
func TestNoteReleasedAtFetchEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 2 * time.Second
		desc := wire.Descriptor{Params: wire.Params{Rounds: 8, RoundLimitMs: uint32(limit / time.Millisecond)}}
		v := &proto.View{Desc: &desc, ID: [32]byte{7}, Chain: []peer.ID{"a", "b", "c"}}
		e := &sepoch{v: v, final: v, pos: 2}
		e.rounds = map[uint32]*sround{}
		s := &Server{changed: make(chan struct{})}
		for q := uint32(5); q <= 6; q++ {
			if !s.noteRoot(e, &wire.Root{Epoch: v.ID, Round: q, S: 1, Root: [32]byte{byte(q)}}) {
				t.Fatal("root refused")
			}
			e.round(q).notes = map[int]*relayNote{0: {at: time.Now()}}
		}
		end := e.relayEnd(5, 0, e.rounds[5].notes[0])
		// Round 7's root comes later, so that its note is in time when
		// the others' fetches end.
		time.Sleep(2 * fetchGrace(e))
		if !s.noteRoot(e, &wire.Root{Epoch: v.ID, Round: 7, S: 1, Root: [32]byte{7}}) {
			t.Fatal("root refused")
		}
		if err := e.noteRefused(7, 0); err == nil {
			t.Fatalf("a third note of one receiver taken with %d fetches running", notesHeld)
		}
		time.Sleep(time.Until(end) + time.Millisecond)
		err := e.noteRefused(7, 0)
		t.Logf("the two fetches ended %v after their notes; a third note then: %v", end.Sub(e.rounds[5].notes[0].at), err)
		if err != nil {
			t.Errorf("the third note once the two fetches' end passed: %v", err)
		}
	})
}
