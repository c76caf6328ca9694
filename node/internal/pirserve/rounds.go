package pirserve

import (
	"sync"

	"github.com/riffle-net/riffle/node/internal/pirround"
)

// Rounds is the PIR state of an epoch's rounds at a primary (package
// pirround's Round, one a round), made on first use. mu is a leaf lock:
// its methods call nothing outside. Rounds below the mark set by Prune
// are over here: their state is dropped and nothing more is taken.
type Rounds struct {
	mu     sync.Mutex
	rounds map[uint32]*pirround.Round
	below  uint32
}

// at is round r's state, made on first use; nil once r is over. Call
// with mu held.
func (rs *Rounds) at(r uint32) *pirround.Round {
	if r < rs.below {
		return nil
	}
	x := rs.rounds[r]
	if x == nil {
		if rs.rounds == nil {
			rs.rounds = map[uint32]*pirround.Round{}
		}
		n := pirround.New()
		x = &n
		rs.rounds[r] = x
	}
	return x
}

// Query records slot sl's masks for round r (pirround.Round.Query);
// over: the round is over here, nothing taken.
func (rs *Rounds) Query(r, sl uint32, masks [][]byte) (fresh, over bool, err error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	x := rs.at(r)
	if x == nil {
		return false, true, nil
	}
	fresh, err = x.Query(sl, masks)
	return fresh, false, err
}

// Queried is how many of this primary's clients sent their masks of
// round r.
func (rs *Rounds) Queried(r uint32) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if x := rs.rounds[r]; x != nil && r >= rs.below {
		return len(x.Queries)
	}
	return 0
}

// Masks are the masks of round r of the slots of mine that sent theirs,
// in the order of mine, and those slots.
func (rs *Rounds) Masks(r uint32, mine []uint32) (slots []uint32, masks [][][]byte) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	x := rs.rounds[r]
	if x == nil || r < rs.below {
		return nil, nil
	}
	for _, sl := range mine {
		if q, ok := x.Queries[sl]; ok {
			slots = append(slots, sl)
			masks = append(masks, q)
		}
	}
	return slots, masks
}

// QueryOf is slot sl's masks of round r, nil if none came.
func (rs *Rounds) QueryOf(r, sl uint32) [][]byte {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if x := rs.rounds[r]; x != nil {
		return x.Queries[sl]
	}
	return nil
}

// Answer is slot sl's combined answers of round r, nil while they are
// not; over: the round is over here.
func (rs *Rounds) Answer(r, sl uint32) (ans [][]byte, over bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r < rs.below {
		return nil, true
	}
	if x := rs.rounds[r]; x != nil {
		return x.Answers[sl], false
	}
	return nil, false
}

// Sizes are the counts of round r's masks, padded answers, their
// senders and combined answers (tests compare state).
func (rs *Rounds) Sizes(r uint32) (queries, pads, padFrom, answers int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if x := rs.rounds[r]; x != nil {
		return len(x.Queries), len(x.Pads), len(x.PadFrom), len(x.Answers)
	}
	return 0, 0, 0, 0
}

// addPads is pirround.Round.AddPads of round r; a round over here takes
// nothing and frees body.
func (rs *Rounds) addPads(r uint32, j int, slots []uint32, rows [][]byte, k int, body []byte) (free []byte, added bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	x := rs.at(r)
	if x == nil {
		return body, false
	}
	return x.AddPads(j, slots, rows, k, body)
}

// setOwn sets this primary's own part of round r's answers; false if
// the round is over here.
func (rs *Rounds) setOwn(r uint32, own map[uint32][][]byte) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	x := rs.at(r)
	if x == nil {
		return false
	}
	x.Own = own
	return true
}

// combine is pirround.Round.Combine of round r; each answer combined
// now goes through spoil before anyone can read it (a test's hook).
func (rs *Rounds) combine(r uint32, m int, spoil func(sl uint32, own [][]byte)) (free [][]byte, ok bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	x := rs.at(r)
	if x == nil {
		return nil, false
	}
	fresh, free, ok := x.Combine(m)
	for sl, own := range fresh {
		spoil(sl, own)
	}
	return free, ok
}

// Prune ends the rounds below r here: their state goes, and the frames
// their padded answers held are returned, to be given back.
func (rs *Rounds) Prune(r uint32) (bodies [][]byte) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r <= rs.below {
		return nil
	}
	rs.below = r
	for q, x := range rs.rounds {
		if q < r {
			bodies = append(bodies, x.PadBodies...)
			delete(rs.rounds, q)
		}
	}
	return bodies
}

// DropPads drops every round's padded answers (nothing more is
// combined), keeping the masks and answers for the requests in flight.
func (rs *Rounds) DropPads() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, x := range rs.rounds {
		x.DropPads()
	}
}

// Each calls fn with every buffer list the rounds hold: the padded
// answers' frames, the masks, the padded answers, the own parts and the
// answers (the tests' count of memory held).
func (rs *Rounds) Each(fn func(bufs [][]byte)) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, x := range rs.rounds {
		fn(x.PadBodies)
		for _, m := range []map[uint32][][]byte{x.Queries, x.Pads, x.Own, x.Answers} {
			for _, rows := range m {
				fn(rows)
			}
		}
	}
}
