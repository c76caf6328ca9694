package blame

import (
	"fmt"
	"time"
)

// When a round's parts are due at a server, and when a relay note and the
// batch it fetches count (docs/protocol.md §3, "Charges from evidence",
// and §5.2, "A batch its receiver lacks is relayed"): functions of the
// times a server saw (Round) and of the round limit, so that every honest
// server that saw the same times counts the same dues.

// Dues holds the group constant every due is counted from.
type Dues struct {
	Limit time.Duration // the round limit
}

// Window is a server's wait for its input batch from its root before it
// claims the lack (the hop and one round interval, both from the round
// limit: the claim reaches S_0 before S_0 gives the publication up); a
// hop, for the dues, is one Window.
func (d Dues) Window() time.Duration { return d.Limit / 2 }

// Fetch is how long the batch itself may take after its root.
func (d Dues) Fetch() time.Duration { return d.Window() / 4 }

// Kept is how long a server keeps a batch it sent: past its successor's
// whole window, which starts later, and the noted servers' fetches in it.
func (d Dues) Kept() time.Duration { return d.Limit }

// BodyWait is how long a noted server may take to get the batch from its
// signer, at the least: S_0's wait on a lack claim. A note's body has two.
func (d Dues) BodyWait() time.Duration { return d.Fetch() }

// Reask is the pause before a receiver asks a holder (its predecessor or a
// noted server) again for its input batch after an ask failed: half a
// fetch, so that a copy that comes to a holder by the body's due (a fetch
// before the window's end) is asked for again inside the window, at a
// pace that scales with the round limit (a fixed 250 ms was a tenth of a
// window at a 5 s limit and 4.8 windows at the 100 ms floor).
func (d Dues) Reask() time.Duration { return d.Fetch() / 2 }

// NoteLast is how long after the batch's part came (Came) an honest
// receiver's first note may come: the root may reach the receiver a
// forward later (a fetch after the root came at the forwarder), the
// receiver notes a fetch after its root, and a fetch is the slack for the
// forward's and the note's delays and the note's stream set-up (half a
// fetch, a 140 ms link charged an honest receiver: TestRootWithheldSlowLink,
// node). A later note is refused: its claim of the lack is its own.
func (d Dues) NoteLast() time.Duration { return 3 * d.Fetch() }

// Round is what one server saw of one round, in time.
type Round struct {
	// Open is when the round opened there (round q − 2 published or
	// void, the setup verified, or S_0's signed part come, whichever was
	// first); zero while it is not open.
	Open time.Time
	// Self is the server's chain position.
	Self int
	// Parts has, by chain position j, when j's signed root first came
	// there, or for Self when it passed the round on; zero if not.
	Parts []time.Time
	// Notes has, by chain position j, the relay note of j's batch that
	// its receiver asked there (zero At: none).
	Notes []Note
	// In has, by chain position j, when j's part counts as come for its
	// lateness (Late): the earliest over its copies of arrival less a
	// relay step per relay signature (RelayStep); zero: Parts.
	In []time.Time
}

// Note is a noted server's times of one relay note: when the note came,
// and when the batch fetched for it from its signer came (zero: not).
type Note struct{ At, BodyAt time.Time }

func (r *Round) note(j int) (Note, bool) {
	if j < 0 || j >= len(r.Notes) || r.Notes[j].At.IsZero() {
		return Note{}, false
	}
	return r.Notes[j], true
}

// From is when position j passed the round on, as far as the server can
// tell: its root's arrival there (its own part: when it sent it), but
// never before the part it is made of came there, since no honest server
// passes a round on before its input: a signer that sends its root to one
// server early, or before the round opens there, cannot start that
// server's dues apart from the others' (TestEarlyRootFramesReceiver,
// node). The signer's kept copy counts from here too.
func (d Dues) From(r *Round, j int) (time.Time, bool) {
	if j < 0 || j >= len(r.Parts) || r.Parts[j].IsZero() {
		return time.Time{}, false
	}
	at := r.Parts[j]
	if j > 0 && !r.Open.IsZero() {
		if prev, ok := d.came(r, j-1); ok && at.Before(prev) {
			at = prev
		}
	}
	return at, true
}

// came is From, with a part that came before the round opened, its input's
// part not there, counted as come at the latest S_0 could mix the round
// (a round limit after the opening).
func (d Dues) came(r *Round, j int) (time.Time, bool) {
	at, ok := d.From(r, j)
	if ok && at.Before(r.Open) {
		at = r.Open.Add(d.Limit)
	}
	return at, ok
}

// Came is when position j's part came, as far as dues go (From, and a part
// before the opening a round limit after it); never for the server's own
// part, whose successor's part is due from its own due, nor while the
// round is not open.
func (d Dues) Came(r *Round, j int) (time.Time, bool) {
	if j == r.Self || r.Open.IsZero() {
		return time.Time{}, false
	}
	return d.came(r, j)
}

// Due is when each part of the round is due (nil while it is not open):
// S_0's part a round limit (its wait for the onions) and a hop after the
// opening, each later part a hop after the part before it came (Came; the
// server's own part when it sent it), or after that part's due if it
// never came; after its batch came, or after the body's due (BodyDue), if
// its server noted that it lacks that batch.
func (d Dues) Due(r *Round) []time.Time {
	if r.Open.IsZero() {
		return nil
	}
	hop := d.Window()
	due := make([]time.Time, len(r.Parts))
	due[0] = r.Open.Add(d.Limit + hop)
	for j := 1; j < len(due); j++ {
		base := due[j-1]
		if at, ok := d.came(r, j-1); ok {
			base = at
		}
		// Server j noted that it lacks part j−1: its own part counts
		// from when the batch came here, which it asks for, or from
		// when this server gave up on getting it.
		if n, ok := r.note(j - 1); ok {
			at := d.BodyDue(r, j-1, n)
			if !n.BodyAt.IsZero() {
				at = n.BodyAt
			}
			if at.After(base) {
				base = at
			}
		}
		due[j] = base.Add(hop)
	}
	return due
}

// BodyDue is when batch j, noted by its receiver (n), counts as missing if
// it has not come: a fetch before the receiver's lack window closes, that
// window counted from the batch's part (Came) or, if later, from a fetch
// before the note (an honest receiver notes a fetch after its window
// opens). A copy that came by then the receiver, with an ask open at
// every holder (one that holds its ask holds up only itself), could still
// take within its window; the signer has at least two
// fetches after any note taken (NoteLast) for the copies its receiver's
// notes ask of it (TestThinSignerNotFramed, node). Not past the signer's
// kept copy less a fetch, counted from From.
func (d Dues) BodyDue(r *Round, j int, n Note) time.Time {
	start := n.At.Add(-d.Fetch())
	if came, ok := d.Came(r, j); ok && came.After(start) {
		start = came
	}
	due := start.Add(d.Window() - d.Fetch())
	from, _ := d.From(r, j)
	if kept := from.Add(d.Kept() - d.Fetch()); kept.Before(due) {
		due = kept
	}
	return due
}

// RelayEnd is when the fetch for a note (n) of batch j ends: a fetch after
// the body's due, when the receiver's window closes as BodyDue counts it.
func (d Dues) RelayEnd(r *Round, j int, n Note) time.Time {
	return d.BodyDue(r, j, n).Add(d.Fetch())
}

// BodyMissing reports that batch j, noted by its receiver, did not come by
// its due (BodyDue), and since when that counts; false without a note. A
// copy that came later counts as missing: the receiver may have had to
// claim the lack before it could get it, and the signer must not make that
// claim the receiver's by a late answer.
func (d Dues) BodyMissing(r *Round, j int) (time.Time, bool) {
	n, ok := r.note(j)
	if !ok {
		return time.Time{}, false
	}
	due := d.BodyDue(r, j, n)
	if !n.BodyAt.IsZero() && !n.BodyAt.After(due) {
		return time.Time{}, false
	}
	return due, true
}

// NoteLate says why a relay note of batch j coming at now is not taken on
// its timing, nil if it may be: the round must be open and the batch's
// part there; the note must come by NoteLast after the part came, when an
// honest receiver's has come (TestLateNoteFramesThinSigner, node), and
// while the signer still keeps its copy with two fetches to spare for the
// body: within Kept less three fetches of From, not of Came, which for a
// part that came before the opening is a round limit after it, past the
// copy (TestNoteWithinKeptCopy).
func (d Dues) NoteLate(r *Round, j int, now time.Time) error {
	if r.Open.IsZero() {
		return fmt.Errorf("round not open here")
	}
	came, ok := d.Came(r, j)
	if !ok {
		return fmt.Errorf("no root of batch %d here", j+1)
	}
	if now.Sub(came) > d.NoteLast() {
		return fmt.Errorf("batch %d asked later than its receiver's first note comes", j+1)
	}
	if from, _ := d.From(r, j); now.Sub(from) > d.Kept()-3*d.Fetch() {
		return fmt.Errorf("batch %d asked past its signer's kept copy", j+1)
	}
	return nil
}

// LateGrace is how long after its due a part j ≥ 1 may still come here
// without counting as late: its input may reach its server that long
// after the input's part came here with no note here, the input's signer
// keeping its root from it (a fetch until another server hands the root
// on) and its batch until just before its server notes (a fetch more).
// Without it a corrupt signer left its honest receiver a quarter of a
// round limit of its hop, and a later corrupt server's void charged the
// receiver (TestLateSqueezedReceiver).
func (d Dues) LateGrace() time.Duration { return 2 * d.Fetch() }

// Late reports that part j came here after its due (due from Due), and
// for j ≥ 1 after LateGrace more: it counts as missing from its due, as if
// it never came. Every honest server counts a part's due from the part
// before it, which its signer does not choose; a signer that sends its
// root to its receiver in time and to the others only after the
// receiver's window closed otherwise had the void charged to its honest
// receiver, its part held everywhere (TestStaggeredRootOneCorrupt, node).
// The receiver's window lasts past LateGrace (LackEnd), so that a root
// that comes in time here meets its notes. S_0's part has no grace: no
// server comes before it, and its due holds the round limit.
func (d Dues) Late(r *Round, due []time.Time, j int) bool {
	if j == r.Self || j >= len(r.Parts) || j >= len(due) || r.Parts[j].IsZero() {
		return false
	}
	came := r.Parts[j]
	if j < len(r.In) && !r.In[j].IsZero() && r.In[j].Before(came) {
		came = r.In[j]
	}
	return came.After(d.lastIn(due, j))
}

// lastIn is the last instant part j may come here directly and count as
// in time: its due, and LateGrace for j ≥ 1.
func (d Dues) lastIn(due []time.Time, j int) time.Time {
	if j > 0 {
		return due[j].Add(d.LateGrace())
	}
	return due[j]
}

// RelayStep is how much later than lastIn a copy of a part may come here
// for each relay signature it carries, of distinct chain servers other
// than its signer, and still count as in time (docs/protocol.md §5.2,
// "every honest server holds the same parts"): a message's delay and the
// spread of the honest servers' dues (a root relayed at first sight), at
// most half a fetch. An honest server that takes a part in time signs and
// relays it at once, so that every honest server takes it in time too,
// by a step more (Dolev and Strong's authenticated broadcast, 1983): a
// signer that times its part to reach one honest server at the edge of
// its due cannot split the honest servers' attestations
// (TestEdgeSplitCharged, node).
func (d Dues) RelayStep() time.Duration { return d.Fetch() / 2 }

// Faults is how many corrupt servers of a chain of m the relay windows
// allow for: fewer than half.
func Faults(m int) int { return (m - 1) / 2 }

// RelayWindow is how many relay signatures a copy of a part counts (more
// count as that many), and Settled is when no copy still to come can
// make part j count as in time here: Faults(m) relay steps past lastIn.
// A copy with that many signatures of servers other than the part's
// signer holds an honest one, which took the part in time and relayed
// it to every server: by then every honest server took it.
func (d Dues) Settled(due []time.Time, j, m int) time.Time {
	return d.lastIn(due, j).Add(time.Duration(Faults(m)) * d.RelayStep())
}

// TakenIn reports whether a copy of part j with k relay signatures
// coming at now counts as in time here (due from Due).
func (d Dues) TakenIn(due []time.Time, j, k, m int, now time.Time) bool {
	if j >= len(due) {
		return true // the round not open: not late (Late)
	}
	k = min(k, Faults(m))
	return !now.Add(-time.Duration(k) * d.RelayStep()).After(d.lastIn(due, j))
}

// LackEnd is when the server (r.Self ≥ 1), waiting since start for its
// input batch, gives up and claims the lack: a Window after start, and
// for an input from S_1 on no sooner than a Window after the input's due
// here, which is its own part's due had the input never come. Its asks,
// each a relay note, go on that long: a signer whose root comes at
// another server in time there (within LateGrace of its due) meets a
// note there, with two fetches of slack for the asks' round among the
// holders, and cannot frame its receiver by a root sent after the window
// (TestStaggeredRootOneCorrupt, node).
func (d Dues) LackEnd(r *Round, start time.Time) time.Time {
	end := start.Add(d.Window())
	if r.Self < 2 {
		return end
	}
	if due := d.Due(r); r.Self-1 < len(due) {
		if at := due[r.Self-1].Add(d.Window()); at.After(end) {
			end = at
		}
	}
	return end
}

// VoidAfter is the soonest S_0 has a round signed void on the lack claim
// of position k (its input, batch k − 1, missing): the claim is evidence
// only once the claimant's own part is due, and the noted servers, whose
// dues count from when the parts came there, have a body wait more; nor
// before the latest a noted server's body is due for a note taken there
// (NoteLast, BodyDue), as this server saw the batch's part, and a body
// wait more: before it, a server whose fetch still ran would back neither
// part (TestEarlyLackFramesNoOne, node). The batch's part may come at
// another server as late as LateGrace after its due and still count
// there, and its receiver notes it there up to LackEnd: the latest body
// due counts from that too, for a batch from S_1 on. Zero if the round is
// not open.
func (d Dues) VoidAfter(r *Round, k int) time.Time {
	var until time.Time
	due := d.Due(r)
	if k < len(due) {
		until = due[k].Add(d.BodyWait())
	}
	if came, ok := d.came(r, k-1); ok && !r.Open.IsZero() {
		if k-1 >= 1 && k-1 < len(due) {
			if in := due[k-1].Add(d.LateGrace()); in.After(came) {
				came = in
			}
		}
		if last := came.Add(d.NoteLast() + d.Window() - 2*d.Fetch() + d.BodyWait()); last.After(until) {
			until = last
		}
	}
	return until
}

// Stale is when round r, open here, is stale if neither its publication
// nor a void of it came: three round limits past the last part's due
// (Due). Before it S_0 takes its own path for a missing publication (a
// quarter limit past the same due, the holders asked a round limit, then
// its void or its abort), with a limit to spare for the spread of the
// openings. Only the dues count, never how long the round was quiet: a
// corrupt minority that passes its parts on late, inside their dues,
// makes no round stale (TestRev2SlowRoundSupersedesEpoch, node). Zero
// while the round is not open.
func (d Dues) Stale(r *Round) time.Time {
	due := d.Due(r)
	if len(due) == 0 {
		return time.Time{}
	}
	return due[len(due)-1].Add(3 * d.Limit)
}

// ListDue is when round r's final request list is due at a server where
// the round is open: at the stale instant (Stale), three round limits
// past its publication's due, by when an honest S_0 has the publication,
// from the last server or from the holders (a quarter and a round limit
// past the same due at S_0), or has given it up (its void or abort), and
// its list's signatures and delivery have most of a round limit more,
// with a limit to spare for the spread of the openings. Counted from the
// due, never from when the publication came: the last server chooses
// that, for each server apart. Zero while the round is not open.
func (d Dues) ListDue(r *Round) time.Time { return d.Stale(r) }

// ListGone is when a server that published round r and holds no final
// list of it gives the list up and ends the epoch (an abort of kind
// AbortNoList): two round limits past ListDue, in which it asks the chain
// for the list, so that the others' dues, counted from their own
// openings, have passed and they attest the list missing. Zero while the
// round is not open.
func (d Dues) ListGone(r *Round) time.Time {
	due := d.ListDue(r)
	if due.IsZero() {
		return due
	}
	return due.Add(2 * d.Limit)
}
