package blame

import (
	"testing"
	"time"
)

var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// round3 is a round of three servers seen from self, opened at t0, with
// S_0's part come at the opening.
func round3(self int) *Round {
	r := &Round{Open: t0, Self: self, Parts: make([]time.Time, 3)}
	r.Parts[0] = t0
	return r
}

// TestDueChain: S_0's part is due a round limit and a hop after the
// opening; S_0's part that came at the opening makes S_1's due a hop after
// it, and the publication, S_1's part not here, a hop after that.
func TestDueChain(t *testing.T) {
	d := Dues{Limit: 2 * time.Second}
	hop := d.Window()
	due := d.Due(round3(2))
	want := []time.Time{t0.Add(d.Limit + hop), t0.Add(hop), t0.Add(2 * hop)}
	for j := range want {
		if !due[j].Equal(want[j]) {
			t.Errorf("part %d due %v after the opening, want %v", j, due[j].Sub(t0), want[j].Sub(t0))
		}
	}
	if d.Due(&Round{Parts: make([]time.Time, 3)}) != nil {
		t.Error("dues of a round not open")
	}
}

// TestDueRelayNote (was node's TestAbsenceDueRelayNote): S_1 noted this
// server (S_2 of three) that it lacks S_0's batch. S_1's part is then due
// a hop after the batch came here, or a hop after the body's due if it
// never came (a fetch before S_1's lack window closes, counted from the
// root or from a fetch before the note if later), and S_0's batch counts
// as missing from the body's due unless it came by then; a copy that came
// later still counts as missing.
func TestDueRelayNote(t *testing.T) {
	d := Dues{Limit: 2 * time.Second}
	hop, wait := d.Window(), d.BodyWait()
	r := round3(2)
	if _, miss := d.BodyMissing(r, 0); miss {
		t.Fatal("S_0's batch missing without a note")
	}
	n := Note{At: t0.Add(d.Fetch())}
	r.Notes = []Note{n, {}, {}}
	body := t0.Add(hop - d.Fetch())
	if got := d.BodyDue(r, 0, n); !got.Equal(body) || !body.Equal(n.At.Add(2*wait)) {
		t.Fatalf("body due %v after the note, want %v", got.Sub(n.At), 2*wait)
	}
	if due := d.Due(r); !due[1].Equal(body.Add(hop)) {
		t.Fatalf("S_1's part due %v after the note, want %v", due[1].Sub(n.At), body.Add(hop).Sub(n.At))
	}
	if at, miss := d.BodyMissing(r, 0); !miss || !at.Equal(body) {
		t.Fatalf("S_0's batch: missing %v from %v after the note, want from %v", miss, at.Sub(n.At), body.Sub(n.At))
	}
	// The latest note taken (NoteLast after the root) leaves the signer
	// two fetches (TestLateNoteFramesThinSigner, node).
	late := Note{At: t0.Add(d.NoteLast())}
	if due := d.BodyDue(r, 0, late); !due.Equal(late.At.Add(2 * wait)) {
		t.Fatalf("a late note's body due %v after it, want two body waits", due.Sub(late.At))
	}
	if end := d.RelayEnd(r, 0, late); !end.Equal(late.At.Add(3 * wait)) {
		t.Fatalf("a late note's fetch ends %v after it, want three body waits", end.Sub(late.At))
	}
	r.Notes[0].BodyAt = n.At.Add(wait / 2)
	if due := d.Due(r); !due[1].Equal(r.Notes[0].BodyAt.Add(hop)) {
		t.Fatalf("S_1's part due %v after the batch came, want a hop", due[1].Sub(r.Notes[0].BodyAt))
	}
	if _, miss := d.BodyMissing(r, 0); miss {
		t.Fatal("S_0's batch counts as missing though it came in time")
	}
	r.Notes[0].BodyAt = body.Add(time.Millisecond)
	if _, miss := d.BodyMissing(r, 0); !miss {
		t.Fatal("a copy that came after its due counts as held")
	}
}

// TestFromFloor: a part counts as come no sooner than the part it is made
// of (From), the server's own part counting from when it sent it; one that
// came before the opening with its input's part not here counts as come a
// round limit after the opening (Came), while the signer's copy still
// counts from its arrival (From). Before (node's partCame), an early root
// counted from the opening plus a round limit at its receiver and from its
// arrival at the others (TestEarlyRootFramesReceiver, node).
func TestFromFloor(t *testing.T) {
	d := Dues{Limit: 4 * time.Second}
	early, s0 := t0.Add(-5*time.Second), t0.Add(3*time.Second)
	for _, c := range []struct {
		name string
		self int
		s0At time.Time // S_0's part here (for self 0: when it sent it)
		want time.Time // when S_1's early part counts as come
		from time.Time
	}{
		{"receiver, S_0's part here", 2, s0, s0, s0},
		{"S_0, its own part sent", 0, s0, s0, s0},
		{"S_0's part not here", 2, time.Time{}, t0.Add(d.Limit), early},
	} {
		r := &Round{Open: t0, Self: c.self, Parts: []time.Time{c.s0At, early, {}, {}}}
		got, ok := d.Came(r, 1)
		from, _ := d.From(r, 1)
		if !ok || !got.Equal(c.want) || !from.Equal(c.from) {
			t.Errorf("%s: S_1's part came %v, from %v after the opening; want %v, %v", c.name, got.Sub(t0), from.Sub(t0), c.want.Sub(t0), c.from.Sub(t0))
		}
	}
	r := &Round{Open: t0, Self: 0, Parts: []time.Time{s0, {}, {}}}
	if _, ok := d.Came(r, 0); ok {
		t.Error("a server's own part counts as come for its successor's due")
	}
	r = &Round{Open: t0, Self: 2, Parts: []time.Time{s0, s0.Add(time.Second), {}}}
	if got, _ := d.Came(r, 1); !got.Equal(s0.Add(time.Second)) {
		t.Errorf("a part after its input's counts as come %v after it, want its arrival", got.Sub(s0))
	}
}

// TestNoteLate: a note is taken up to NoteLast after its part came, and
// within the signer's kept copy less three fetches of From: a root two
// round limits before the opening, its input's part not here, counts as
// come a round limit after the opening, past the copy, so a note then is
// refused and an early note's body is due within the copy (was node's
// TestNoteWithinKeptCopy's arithmetic).
func TestNoteLate(t *testing.T) {
	d := Dues{Limit: 2 * time.Second}
	r := round3(2)
	if err := d.NoteLate(r, 0, t0.Add(d.NoteLast())); err != nil {
		t.Errorf("a note at NoteLast refused: %v", err)
	}
	if err := d.NoteLate(r, 0, t0.Add(d.NoteLast()+time.Millisecond)); err == nil {
		t.Error("a note past NoteLast taken")
	}
	if err := d.NoteLate(&Round{Self: 2, Parts: r.Parts}, 0, t0); err == nil {
		t.Error("a note of a round not open taken")
	}
	root := t0.Add(-2 * d.Limit)
	r = &Round{Open: t0, Self: 3, Parts: []time.Time{{}, root, {}, {}}}
	came, _ := d.Came(r, 1)
	if err := d.NoteLate(r, 1, came); err == nil {
		t.Errorf("a note %v after the root taken: the signer keeps its copy %v", came.Sub(root), d.Kept())
	}
	if due := d.BodyDue(r, 1, Note{At: root.Add(d.Fetch())}); !due.Before(root.Add(d.Kept())) {
		t.Errorf("the body of an early note due %v after the root, past the signer's copy (%v)", due.Sub(root), d.Kept())
	}
}

// TestVoidAfter: S_0 voids on S_2's claim (m = 3) no sooner than the
// claimant's own part is due and a body wait, nor than the latest body due
// of a note taken anywhere, counted from the part here, and a body wait.
func TestVoidAfter(t *testing.T) {
	d := Dues{Limit: 4 * time.Second}
	F := d.Fetch()
	r := &Round{Open: t0, Self: 0, Parts: []time.Time{t0, t0.Add(F), {}}}
	came := t0.Add(F)
	due := d.Due(r)
	if !due[2].Equal(came.Add(d.Window())) {
		t.Fatalf("the claimant's part due %v after S_1's, want a hop", due[2].Sub(came))
	}
	want := came.Add(d.NoteLast() + d.Window() - 2*F + d.BodyWait())
	if got := d.VoidAfter(r, 2); !got.Equal(want) || !got.After(due[2].Add(d.BodyWait())) {
		t.Errorf("void %v after S_1's part came, want %v", got.Sub(came), want.Sub(came))
	}
}

// TestLate: S_1's part is due a hop after S_0's part, at S_0 counted from
// when S_0 sent it; a root that comes after that due counts as missing,
// one that comes by it as held, and a server's own part is never late.
// Before, S_0 counted S_1's part due a round limit and two hops after the
// opening, and any root that came before the attestation as held
// (TestStaggeredRootOneCorrupt, node).
func TestLate(t *testing.T) {
	d := Dues{Limit: 4 * time.Second}
	sent := t0.Add(time.Second)
	r := &Round{Open: t0, Self: 0, Parts: []time.Time{sent, sent.Add(d.Window()), {}, {}}}
	due := d.Due(r)
	if !due[1].Equal(sent.Add(d.Window())) {
		t.Fatalf("S_1's part due %v after S_0 sent its own, want a hop", due[1].Sub(sent))
	}
	if d.Late(r, due, 1) || d.Late(r, due, 0) {
		t.Fatal("a part that came at its due, or this server's own, counted late")
	}
	r.Parts[1] = r.Parts[1].Add(time.Millisecond)
	if !d.Late(r, d.Due(r), 1) {
		t.Fatal("a part that came after its due counted as held")
	}
	if d.Late(r, d.Due(r), 2) {
		t.Fatal("a part not here counted late (it is missing, not late)")
	}
}
