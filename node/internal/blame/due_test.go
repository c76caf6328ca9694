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
// of a note taken anywhere, and a body wait: counted from the part here,
// or from the latest it may come at another server and count there
// (LateGrace after its due), if later.
func TestVoidAfter(t *testing.T) {
	d := Dues{Limit: 4 * time.Second}
	F := d.Fetch()
	r := &Round{Open: t0, Self: 0, Parts: []time.Time{t0, t0.Add(F), {}}}
	came := t0.Add(F)
	due := d.Due(r)
	if !due[2].Equal(came.Add(d.Window())) {
		t.Fatalf("the claimant's part due %v after S_1's, want a hop", due[2].Sub(came))
	}
	in := due[1].Add(d.LateGrace())
	want := in.Add(d.NoteLast() + d.Window() - 2*F + d.BodyWait())
	if got := d.VoidAfter(r, 2); !got.Equal(want) || !got.After(due[2].Add(d.BodyWait())) {
		t.Errorf("void %v after S_1's part came, want %v", got.Sub(came), want.Sub(came))
	}
	// A part late here counts from its arrival.
	r.Parts[1] = in.Add(F)
	if got, want := d.VoidAfter(r, 2), r.Parts[1].Add(d.NoteLast()+d.Window()-2*F+d.BodyWait()); !got.Equal(want) {
		t.Errorf("void %v after a late part came, want %v", got.Sub(r.Parts[1]), want.Sub(r.Parts[1]))
	}
}

// TestLate: S_1's part is due a hop after S_0's part, at S_0 counted from
// when S_0 sent it; a root that comes after that due and LateGrace counts
// as missing, one that comes by then as held, and a server's own part is
// never late; S_0's part is late from its due.
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
	r.Parts[1] = r.Parts[1].Add(d.LateGrace())
	if d.Late(r, d.Due(r), 1) {
		t.Fatal("a part that came within LateGrace of its due counted late")
	}
	r.Parts[1] = r.Parts[1].Add(time.Millisecond)
	if !d.Late(r, d.Due(r), 1) {
		t.Fatal("a part that came after its due and LateGrace counted as held")
	}
	r = &Round{Open: t0, Self: 1, Parts: []time.Time{t0.Add(d.Limit + d.Window() + time.Millisecond), {}, {}, {}}}
	if !d.Late(r, d.Due(r), 0) {
		t.Fatal("S_0's part after its due counted as held (it has no grace)")
	}
	if d.Late(r, d.Due(r), 2) {
		t.Fatal("a part not here counted late (it is missing, not late)")
	}
}

// TestLateSqueezedReceiver (issue 25, the attacker's review of 701d2bd):
// m = 5, S_1 corrupt, seen from S_0. S_1's root comes here promptly; S_1
// keeps it from its receiver S_2, which gets it a fetch later from S_0's
// forward, and completes S_2's batch just before S_2 would note, a fetch
// after that. Honest S_2 then mixes for most of a hop. Before, S_2's part
// counted late here (and lacking: the first part attested when a later
// corrupt server voids the round) once S_2 mixed more than a quarter of a
// round limit less three transits; now it may mix a hop less three
// transits, and only a part later than that counts late.
func TestLateSqueezedReceiver(t *testing.T) {
	d := Dues{Limit: 10 * time.Second} // the default round limit
	tr := 20 * time.Millisecond        // one transit
	p1 := 10 * time.Millisecond
	sent0 := t0.Add(time.Second)                         // S_0 passed the round on
	root1X := sent0.Add(tr + p1)                         // S_1's root here
	root1S2 := root1X.Add(d.Fetch() + tr)                // forwarded from here to S_2
	body1S2 := root1S2.Add(d.Fetch() - time.Millisecond) // just before S_2 notes
	for _, p2 := range []time.Duration{d.Limit/4 + 50*time.Millisecond - 3*tr, d.Window() - 3*tr} {
		root2X := body1S2.Add(p2 + tr)
		r := &Round{Open: t0, Self: 0, Parts: []time.Time{sent0, root1X, root2X, {}, {}}, Notes: make([]Note, 5)}
		due := d.Due(r)
		if d.Late(r, due, 2) {
			t.Errorf("honest S_2, which got its input %v after S_1's root came here and mixed %v, counts as lacking here (Late; due %v after its input)",
				body1S2.Sub(root1X), p2, due[2].Sub(body1S2))
		}
	}
	r := &Round{Open: t0, Self: 0, Parts: []time.Time{sent0, root1X, body1S2.Add(d.Window() + time.Millisecond), {}, {}}}
	if !d.Late(r, d.Due(r), 2) {
		t.Error("S_2's part a hop after the latest its input can come without a note here counts as held")
	}
}

// TestLackEnd: a receiver from S_2 on waits for its input until a Window
// after the input's due (its own part's due had the input never come),
// past LateGrace and two fetches for its notes; S_1 waits a Window from
// its start. Before, every receiver gave up a Window after its start, so
// a signer whose root came at the others within LateGrace of its due
// met no note there and framed its receiver (TestStaggeredRootOneCorrupt,
// node).
func TestLackEnd(t *testing.T) {
	d := Dues{Limit: 4 * time.Second}
	sent0 := t0.Add(time.Second)
	r := &Round{Open: t0, Self: 2, Parts: []time.Time{sent0, sent0, {}, {}}}
	due := d.Due(r)
	if got, want := d.LackEnd(r, sent0), due[1].Add(d.Window()); !got.Equal(want) || !got.After(due[1].Add(d.LateGrace()+d.Fetch())) {
		t.Errorf("S_2 gives up %v after its input's due, want %v", got.Sub(due[1]), want.Sub(due[1]))
	}
	late := due[1].Add(d.Fetch())
	if got := d.LackEnd(r, late); !got.Equal(late.Add(d.Window())) {
		t.Errorf("S_2 with a late start gives up %v after it, want a Window", got.Sub(late))
	}
	r1 := &Round{Open: t0, Self: 1, Parts: []time.Time{sent0, {}, {}, {}}}
	if got := d.LackEnd(r1, sent0); !got.Equal(sent0.Add(d.Window())) {
		t.Errorf("S_1 gives up %v after its start, want a Window", got.Sub(sent0))
	}
}

// TestStaleFromDues: a round is stale three round limits past its last
// part's due, which a part that came (here S_0's, late) moves on, and
// never while it is not open.
func TestStaleFromDues(t *testing.T) {
	d := Dues{Limit: 2 * time.Second}
	hop := d.Window()
	r := &Round{Open: t0, Self: 2, Parts: make([]time.Time, 3)}
	// No part came: S_0's due, then a hop for each later part.
	want := t0.Add(d.Limit + 3*hop + 3*d.Limit)
	if got := d.Stale(r); !got.Equal(want) {
		t.Errorf("stale %v after the opening, want %v", got.Sub(t0), want.Sub(t0))
	}
	r.Parts[0] = t0.Add(d.Limit + hop) // S_0's part at its due
	if got := d.Stale(r); !got.Equal(want) {
		t.Errorf("S_0's part at its due: stale %v after the opening, want %v", got.Sub(t0), want.Sub(t0))
	}
	r.Parts[1] = t0.Add(d.Limit + hop + hop/2)
	if got, w := d.Stale(r), t0.Add(d.Limit+hop+hop/2+hop+3*d.Limit); !got.Equal(w) {
		t.Errorf("S_1's part half a hop late: stale %v after the opening, want %v", got.Sub(t0), w.Sub(t0))
	}
	if !d.Stale(&Round{Parts: make([]time.Time, 3)}).IsZero() {
		t.Error("a round not open is stale")
	}
}

// TestReaskScales: the pause before a failed batch ask is made again is
// half a fetch at every round limit: a copy that reaches a holder by its
// body's due (a fetch before the lack window closes) is asked for again
// inside the window, and the asks never spin (at the 100 ms floor of the
// round limit, a fixed 250 ms pause outlasted the 50 ms window; at 60 s,
// it asked 240 times a window).
func TestReaskScales(t *testing.T) {
	for _, limit := range []time.Duration{100 * time.Millisecond, 2 * time.Second, 4 * time.Second, 10 * time.Second, 60 * time.Second} {
		d := Dues{Limit: limit}
		p := d.Reask()
		if p <= 0 || p >= d.Fetch() {
			t.Errorf("limit %v: pause %v, want within (0, a fetch %v)", limit, p, d.Fetch())
		}
		if asks := d.Window() / p; asks != 8 {
			t.Errorf("limit %v: %d asks a lack window, want 8", limit, asks)
		}
	}
	if p := (Dues{Limit: 4 * time.Second}).Reask(); p != 250*time.Millisecond {
		t.Errorf("at a 4 s round limit the pause is %v, want the 250 ms it was", p)
	}
}

// TestRelayWindows: m = 5 (f = 2). A direct copy of part 1 counts as in
// time up to its due and LateGrace; a copy with k relay signatures k relay
// steps later, at most f; an In earlier than the arrival makes a late
// part not late; the part is settled f steps past its last instant.
func TestRelayWindows(t *testing.T) {
	d := Dues{Limit: 4 * time.Second}
	r := &Round{Open: t0, Self: 4, Parts: make([]time.Time, 5)}
	r.Parts[0] = t0
	due := d.Due(r)
	last := due[1].Add(d.LateGrace())
	step := d.RelayStep()
	for _, c := range []struct {
		k    int
		at   time.Time
		want bool
	}{
		{0, last, true}, {0, last.Add(time.Millisecond), false},
		{1, last.Add(step), true}, {1, last.Add(step + time.Millisecond), false},
		{2, last.Add(2 * step), true}, {3, last.Add(3 * step), false},
	} {
		if got := d.TakenIn(due, 1, c.k, 5, c.at); got != c.want {
			t.Errorf("k = %d at last + %v: in time %v, want %v", c.k, c.at.Sub(last), got, c.want)
		}
	}
	r.Parts[1] = last.Add(step)
	if !d.Late(r, due, 1) {
		t.Error("a direct copy a step late is not late")
	}
	r.In = make([]time.Time, 5)
	r.In[1] = r.Parts[1].Add(-step) // that copy carried one relay signature
	if d.Late(r, due, 1) {
		t.Error("a copy with one relay signature a step late is late")
	}
	if got := d.Settled(due, 1, 5).Sub(last); got != 2*step {
		t.Errorf("settled %v past the last instant, want %v", got, 2*step)
	}
}
